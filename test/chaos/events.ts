// What the chaos processes write down and tell each other. Every time is a monotonic ms reading
// (clock.ts), comparable across all processes of the run.

/** The locks of a run: plain exclusive locks, read-write locks and semaphores. */
export interface LockSpec {
  name: string;
  type: 'exclusive' | 'rw' | 'semaphore';
  /** Semaphore size; 1 otherwise. */
  limit: number;
}

/** How an operation holds its lock: what the storage rule and the overlap rule are. */
export type Kind = 'exclusive' | 'reader' | 'writer' | 'semaphore';

/** One line of a worker's log (JSONL, written synchronously so a SIGKILL loses at most the line under way). */
export type WorkerEvent =
  /** The request is about to be sent (the SDK reads its own send time just after). */
  | { e: 'start'; op: string; lock: string; kind: Kind; api: 'hold' | 'acquire'; transport: Transport; ttl: number; wait: number; server: number; t: number }
  /** The client learned of the grant; `deadline` is the SDK's conservative lease end. */
  | { e: 'grant'; op: string; token: string; t: number; deadline: number }
  /** A renewal moved the SDK's deadline. */
  | { e: 'deadline'; op: string; t: number; deadline: number }
  /** The SDK gave the lease up (its signal aborted). */
  | { e: 'lost'; op: string; t: number; source: string }
  /** The operation ended without a usable grant. */
  | { e: 'refused'; op: string; t: number; why: 'timeout' | 'late' | 'error' | 'abandoned'; detail: string }
  /** A storage call: `tCheck` when the lease was last checked before it, `t` when the answer came. */
  | { e: 'io'; op: string; io: StorageOp; item?: string; tCheck: number; t: number; ok: boolean | null; detail?: string }
  /** The client stopped counting on the lease (it is about to give it back). */
  | { e: 'release'; op: string; t: number }
  | { e: 'end'; op: string; t: number };

export type StorageOp = 'read' | 'write' | 'append';

/** A request to the storage service. */
export interface StorageRequest {
  lock: string;
  kind: Kind;
  op: StorageOp;
  /** The fencing token as a decimal string. */
  token: string;
  /** False for a client that skips the fence: the storage cannot check what it was not given. */
  fenced: boolean;
  /** The operation (worker-id:sequence) that sends it. */
  client: string;
  /** write and append: the item to add. */
  item?: string;
  /** write: the list length the client read; the write replaces everything from there on. */
  base?: number;
}

export interface StorageReply {
  ok: boolean;
  /** The list's length after the request. */
  length: number;
  detail?: string;
}

/** One request as the storage service saw it, at `t` (when it decided). */
export interface StorageRecord extends StorageRequest {
  t: number;
  ok: boolean;
  /** Items a write cut off the end of the list (a lost update, unless the fence refused it). */
  dropped: number;
}

export interface ListItem {
  item: string;
  token: string;
  kind: Kind;
  client: string;
}

export interface StorageDump {
  lists: Record<string, ListItem[]>;
  records: StorageRecord[];
}

/** Messages between the orchestrator and a worker (IPC). */
export type ToWorker = { type: 'clock' } | { type: 'stop' };
export type FromWorker =
  | { type: 'clock'; t: number }
  | { type: 'state'; loop: number; status: 'idle' | 'waiting' | 'holding'; lock?: string; api?: 'hold' | 'acquire'; kind?: Kind }
  | { type: 'ready' }
  | { type: 'done' };

/** What a worker process is told at start (JSON in argv[2]). */
/** The TypeScript SDK's transport option. */
export type Transport = 'session' | 'unary';

export interface WorkerConfig {
  id: string;
  seed: number;
  /** One address per server replica, each through this worker's own proxy. */
  addrs: string[];
  storagePort: number;
  locks: LockSpec[];
  ttlMs: number;
  /** Critical sections last up to about a quarter of this (ms); long ones one to two of it per round. */
  thinkScaleMs: number;
  /** The share of Hold critical sections that are long. */
  longShare: number;
  loops: number;
  /** How the worker's SDK reaches the servers: one Session stream per client (the default), or a call each. */
  transport: Transport;
  /** A broken client for the negative control: ignores its lease and skips the fence. */
  careless: boolean;
  logFile: string;
}
