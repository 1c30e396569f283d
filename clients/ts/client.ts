// HoldfastClient: the TypeScript SDK's entry point.
import type { ChannelCredentials, ClientOptions } from '@grpc/grpc-js';
import { checkAddress } from './address';
import { explainConnectionErrors } from './connection-errors';
import { secureChannel, type ConnectionSecurity } from './credentials';
import type { LockServiceClient } from './gen/holdfast/v1/lock';
import { holderInfo, type HolderInfo } from './holders';
import { NotAcquiredError } from './errors';
import { openLease } from './hold';
import { ownConnection, StreamConnections, type StreamConnection } from './streams';
import type { Lease } from './lease';
import { Lock } from './lock';
import { acquireRequest, holdRequest, type AcquireOptions, type HoldOptions } from './options';
import { unaryCalls, type UnaryCalls } from './rpc';
import { campaign, observe, type CampaignOptions, type Leader, type Leadership, type ObserveOptions } from './election';
import { watchLock, type LockChange } from './watch';
import { acquireSet, holdSet, type LeaseSet, type LockSet } from './lock-set';

export interface HoldfastClientOptions extends ConnectionSecurity {
  /** Your own channel credentials, instead of the ones `tls` makes; default: plaintext. */
  credentials?: ChannelCredentials;
  /** grpc-js channel options (keepalive, message sizes, ...). */
  channelOptions?: Partial<ClientOptions>;
  /** Deadline of a unary call, added to any wait it asks for; default 10 000 ms. */
  callTimeoutMs?: number;
}

export { modeName, type HolderInfo, type Mode } from './holders';

export interface LockInfo {
  name: string;
  /** Live holders, oldest grant first. */
  holders: HolderInfo[];
  waiters: number;
  /** The last fencing token granted (0n once the lock has been idle long enough to be forgotten). */
  fencingToken: bigint;
  /** The semaphore size of the current holders and waiters; 1 for a plain lock, 0 when idle. */
  limit: number;
  /** How long until the server grants again (a quarantine after a Redis failover), in ms; 0 while it grants. */
  grantsResumeInMs: number;
}

export interface FencingTokenCheck {
  /** True when a live holder has this fencing token right now. */
  live: boolean;
  /** The holder's lease left in ms, when live. */
  ttlMs: number;
  /** The last fencing token granted for the name. */
  latestFencingToken: bigint;
}

const DEFAULT_CALL_TIMEOUT_MS = 10_000;

export class HoldfastClient {
  /** The generated grpc-js stub, for anything the SDK does not wrap. */
  readonly stub: LockServiceClient;
  /** The unary RPCs as promises taking and returning the generated messages. */
  readonly rpc: UnaryCalls;

  private readonly streams: StreamConnections;

  /**
   * `address` is host:port, e.g. '127.0.0.1:50051' (or a gRPC target such as 'unix:/path');
   * anything else throws InvalidAddressError at once.
   */
  constructor(address: string, options: HoldfastClientOptions = {}) {
    checkAddress(address);
    const kind = { tls: options.credentials?._isSecure() ?? options.tls !== undefined, clientCert: options.tls?.cert !== undefined };
    const explain = explainConnectionErrors(address, kind);
    const channelOptions = { ...options.channelOptions, interceptors: [explain, ...(options.channelOptions?.interceptors ?? [])] };
    const channel = secureChannel(options, channelOptions);
    const creds = options.credentials ?? channel.creds;
    this.stub = ownConnection(address, creds, channel.options);
    this.rpc = unaryCalls(this.stub, options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS);
    this.streams = new StreamConnections(this.stub, () => ownConnection(address, creds, channel.options));
  }

  /**
   * Acquires `name` with a unary Acquire, waiting up to `waitMs`. Nothing renews the grant: renew
   * or release it yourself. Throws NotAcquiredError when it is not granted.
   */
  async acquire(name: string, options: AcquireOptions = {}): Promise<Lock> {
    const request = acquireRequest(name, options);
    const sentAt = performance.now();
    const grant = await this.rpc.acquire(request, options.waitMs ?? 0);
    if (!grant.acquired) throw new NotAcquiredError(name, options.waitMs ?? 0);
    return new Lock(this.rpc, name, grant, sentAt);
  }

  /**
   * Holds `name` through a Hold stream: the server renews the lease until `lease.release()`.
   * Throws NotAcquiredError when it is not granted within `waitMs`.
   */
  hold(name: string, options: HoldOptions = {}): Promise<Lease> {
    return this.waitOnAConnection((c) => openLease(c.stub, this.rpc, holdRequest(name, options), options.signal, c.resets));
  }

  /** Opens a waiting stream on a connection with room for it, counted there until it is granted or ends. */
  private waitOnAConnection<T>(open: (connection: StreamConnection) => Promise<T>): Promise<T> {
    const connection = this.streams.forWait();
    connection.waits += 1;
    const done = () => void (connection.waits -= 1);
    const lease = open(connection);
    lease.then(done, done);
    return lease;
  }

  /**
   * Runs `fn` while holding `name` and releases the lock when `fn` settles; returns what `fn`
   * returns and rethrows what it throws. `lease.signal` aborts if the lease is (or may be) lost
   * while `fn` runs: stop touching what the lock protects then.
   */
  async withLock<T>(name: string, fn: (lease: Lease) => Promise<T> | T, options: HoldOptions = {}): Promise<T> {
    const lease = await this.hold(name, options);
    try {
      return await fn(lease);
    } finally {
      await lease.release();
    }
  }

  /**
   * Acquires every name in `names`, all or nothing, with one unary AcquireSet (the server takes them in
   * canonical order, so sets asked for in any order never deadlock). Throws NotAcquiredError when
   * the whole set is not granted within `waitMs`; nothing is left held then.
   */
  acquireSet(names: string[], options: AcquireOptions = {}): Promise<LockSet> {
    return acquireSet(this.rpc, names, options);
  }

  /**
   * Holds every name in `names`, all or nothing, through a HoldSet stream: the server renews each
   * member until `release()`. Its `signal` aborts when any member is (or may be) lost.
   */
  holdSet(names: string[], options: HoldOptions = {}): Promise<LeaseSet> {
    return this.waitOnAConnection((c) => holdSet(c.stub, this.rpc, names, options, c.resets));
  }

  /** Describes `name`: holders, waiters and the last fencing token. */
  async inspect(name: string): Promise<LockInfo> {
    const info = await this.rpc.inspect({ name });
    return {
      name: info.name,
      holders: info.holders.map(holderInfo),
      waiters: info.waiters,
      fencingToken: BigInt(info.fencingToken),
      limit: info.limit,
      grantsResumeInMs: Number(info.grantsResumeInMs),
    };
  }

  /** Asks whether `fencingToken` belongs to a live holder of `name` right now. */
  async checkFencingToken(name: string, fencingToken: bigint): Promise<FencingTokenCheck> {
    const res = await this.rpc.checkFencingToken({ name, fencingToken: fencingToken.toString() });
    return { live: res.live, ttlMs: Number(res.ttlMs), latestFencingToken: BigInt(res.latestFencingToken) };
  }

  /**
   * Follows `name`: yields its state at once, then one LockChange per change, until `signal`
   * aborts or you break out of the loop. Never shows a token.
   */
  watch(name: string, options: { signal?: AbortSignal } = {}): AsyncGenerator<LockChange> {
    return watchLock(this.stub, name, options.signal);
  }

  /** Waits until this process leads `name`, publishing `value` (e.g. its address) to observers. */
  campaign(name: string, value: string, options: CampaignOptions = {}): Promise<Leadership> {
    return campaign(this, name, value, options);
  }

  /** Yields the leader of `name` (null while there is none) now and after every change. */
  observe(name: string, options: ObserveOptions = {}): AsyncGenerator<Leader | null> {
    return observe(this, name, options);
  }

  /** Closes the client's connections. Release leases first: calls already under way are not ended by this. */
  close(): void {
    this.streams.close();
  }
}
