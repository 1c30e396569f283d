// HoldfastClient: the TypeScript SDK's entry point.
import type { ChannelCredentials, ClientOptions } from '@grpc/grpc-js';
import { checkAddress } from './address';
import { countedFrom, type LeaseClock } from './deadline';
import { explainConnectionErrors } from './connection-errors';
import { secureChannel, type ConnectionSecurity } from './credentials';
import type { AcquireRequest, AcquireResponse, LockServiceClient } from '../../gen/holdfast/v1/lock';
import { holderInfo, type HolderInfo } from './holders';
import { NotAcquiredError } from './errors';
import { openLease, openSessionLease } from './hold';
import { PING_EVERY_MS, SessionConnection, SessionUnsupportedError } from './session';
import { ownConnection, StreamConnections, type StreamConnection } from './streams';
import type { Lease } from './lease';
import { Lock } from './lock';
import { acquireRequest, holdRequest, type AcquireOptions, type HoldOptions } from './options';
import { unaryCalls, type UnaryCalls } from './rpc';
import { campaign, observe, type CampaignOptions, type Leader, type Leadership, type ObserveOptions } from './election';
import { watchLock, type LockChange } from './watch';
import { acquireSet, holdSet, holdSetOverSession, unarySetGrant, type LeaseSet, type LockSet } from './lock-set';

export interface HoldfastClientOptions extends ConnectionSecurity {
  /** Your own channel credentials, instead of the ones `tls` makes; default: plaintext. */
  credentials?: ChannelCredentials;
  /** grpc-js channel options (keepalive, message sizes, ...). */
  channelOptions?: Partial<ClientOptions>;
  /** Deadline of a unary call, added to any wait it asks for; default 10 000 ms. */
  callTimeoutMs?: number;
  /**
   * How acquire, release, renew and hold reach the server: 'session' (default) sends them all over
   * one Session stream per client (docs/sessions.md), opened on first use and reopened after a
   * failure, every held lock kept by one heartbeat (a server without the Session RPC answers it
   * UNIMPLEMENTED: the client then keeps to unary calls by itself); 'unary' makes one call each
   * (hold: one Hold stream each). Same API either way.
   */
  transport?: 'session' | 'unary';
  /**
   * With transport 'session': how often a session that holds locks pings the server, in ms; default
   * 60 000. Each pong re-anchors the leases' deadlines (their clock-drift allowance covers at most
   * this plus a lease), and a ping unanswered within callTimeoutMs means the stream was cut off.
   */
  sessionPingMs?: number;
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

function checkTransport(transport: unknown): 'session' | 'unary' {
  if (transport === undefined) return 'session';
  if (transport === 'session' || transport === 'unary') return transport;
  throw new RangeError(`transport must be 'session' or 'unary', got ${JSON.stringify(transport)}`);
}

function checkPingMs(pingMs: unknown): number {
  if (pingMs === undefined) return PING_EVERY_MS;
  if (typeof pingMs === 'number' && Number.isInteger(pingMs) && pingMs > 0) return pingMs;
  throw new RangeError(`sessionPingMs must be a whole number of ms above 0, got ${JSON.stringify(pingMs)}`);
}

export class HoldfastClient {
  /** The generated grpc-js stub, for anything the SDK does not wrap. */
  readonly stub: LockServiceClient;
  /** The unary RPCs as promises taking and returning the generated messages. */
  readonly rpc: UnaryCalls;

  private readonly streams: StreamConnections;
  /** Set with transport 'session', until the server turns out not to serve it. */
  private session?: SessionConnection;
  /** The calls Lock and Lease make: this.rpc, with release and renew over the session when there is one. */
  private lockCalls: UnaryCalls;

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
    const timeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.rpc = unaryCalls(this.stub, timeoutMs);
    this.lockCalls = this.rpc;
    if (checkTransport(options.transport) === 'session') {
      const session = new SessionConnection(this.stub, address, timeoutMs, checkPingMs(options.sessionPingMs));
      this.session = session;
      this.lockCalls = { ...this.rpc, release: session.release, renew: session.renew, releaseSet: session.releaseSet };
    }
    this.streams = new StreamConnections(this.stub, () => ownConnection(address, creds, channel.options));
  }

  /**
   * Acquires `name` with a unary Acquire, waiting up to `waitMs`. Nothing renews the grant: renew
   * or release it yourself. Throws NotAcquiredError when it is not granted.
   */
  async acquire(name: string, options: AcquireOptions = {}): Promise<Lock> {
    const { grant, clock } = await this.acquireGrant(acquireRequest(name, options), options.waitMs ?? 0);
    if (!grant.acquired) throw new NotAcquiredError(name, options.waitMs ?? 0);
    return new Lock(this.lockCalls, name, grant, clock);
  }

  /** The grant, and how its lease_started_after_ms counts (from the Acquire's send time, or the session's anchors). */
  private acquireGrant(request: AcquireRequest, waitMs: number): Promise<{ grant: AcquireResponse; clock: LeaseClock }> {
    return this.overSession(
      (session) => session.acquire(request, waitMs),
      async () => {
        const clock = countedFrom(performance.now());
        return { grant: await this.rpc.acquire(request, waitMs), clock };
      },
    );
  }

  /**
   * `viaSession` over the client's session, or `unary` without one. A server without the Session
   * RPC (older than it) answers UNIMPLEMENTED, which means nothing was done: the client then keeps
   * to unary calls, and this operation is made again as one.
   */
  private async overSession<T>(viaSession: (session: SessionConnection) => Promise<T>, unary: () => Promise<T>): Promise<T> {
    const session = this.session;
    if (!session) return unary();
    try {
      return await viaSession(session);
    } catch (err) {
      if (!(err instanceof SessionUnsupportedError)) throw err;
      if (this.session === session) {
        this.session = undefined;
        this.lockCalls = this.rpc;
      }
      return unary();
    }
  }

  /**
   * Holds `name` through a Hold stream: the server renews the lease until `lease.release()`.
   * Throws NotAcquiredError when it is not granted within `waitMs`.
   */
  hold(name: string, options: HoldOptions = {}): Promise<Lease> {
    return this.overSession(
      (session) => openSessionLease(session, this.lockCalls, holdRequest(name, options), options.signal),
      () => this.waitOnAConnection((c) => openLease(c.stub, this.rpc, holdRequest(name, options), options.signal, c.resets)),
    );
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
   * Acquires every name in `names`, all or nothing, with one AcquireSet (the server takes them in
   * canonical order, so sets asked for in any order never deadlock). Throws NotAcquiredError when
   * the whole set is not granted within `waitMs`; nothing is left held then.
   */
  acquireSet(names: string[], options: AcquireOptions = {}): Promise<LockSet> {
    return this.overSession(
      (session) => acquireSet(this.lockCalls, session.acquireSet, names, options),
      () => acquireSet(this.rpc, unarySetGrant(this.rpc), names, options),
    );
  }

  /**
   * Holds every name in `names`, all or nothing, under the client's session (with transport
   * 'unary': through a HoldSet stream): the server renews each member until `release()`. Its
   * `signal` aborts when any member is (or may be) lost.
   */
  holdSet(names: string[], options: HoldOptions = {}): Promise<LeaseSet> {
    return this.overSession(
      (session) => holdSetOverSession(session, this.lockCalls, names, options),
      () => this.waitOnAConnection((c) => holdSet(c.stub, this.rpc, names, options, c.resets)),
    );
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

  /**
   * Closes the client's connections. Release leases first: calls already under way are not ended by
   * this. With transport 'session', the session is closed cleanly, which releases its holds.
   */
  close(): void {
    void this.session?.close();
    this.streams.close();
  }
}
