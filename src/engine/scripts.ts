// The lock operations by name, as the engine times and counts them (observer.ts). Each store maps
// them onto its own scripts: one Redis onto lua/<operation>-<keys>.lua (src/redis/scripts.ts).
export type ScriptName =
  | 'acquire'
  | 'release'
  | 'renew'
  | 'renewBatch'
  | 'claim'
  | 'dequeue'
  | 'inspect'
  | 'checkFencingToken'
  | 'requestId'
  | 'setValue'
  // Deadlock detection (deadlocks.ts): the owners' wait records and the walk's steps.
  | 'noteWait'
  | 'forgetWait'
  | 'waitsOf'
  | 'waitEdge'
  | 'abortWait';
