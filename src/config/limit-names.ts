// The per-connection and per-namespace limits a call can be refused for, named as their flags:
// the transport enforces them, metrics count their refusals.
export type LimitName =
  | 'max-holds-per-connection'
  | 'max-waiters-per-connection'
  | 'max-holds-per-namespace'
  | 'max-waiters-per-namespace'
  | 'min-ping-interval-ms';
