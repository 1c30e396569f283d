// Kleppmann's scenario with signed fences, on each store's real backend, over HTTP and gRPC: a
// paused holder's late write is refused and no update is lost; with the lease-end check on, a
// paused holder whose lease ended is refused even before anyone newer wrote. Negative control: the
// issue's first attack (a forged token) against a guard without keys takes the resource over.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcFenceGuard, httpFenceGuard } from '../../clients/ts/fencing';
import { uniqueName } from '../support/redis';
import { startHttpApp, type HttpApp } from './http-app';
import { startRawGrpc, type RawGrpc } from './raw-grpc';
import { signed, vectorRing } from './signing';
import { openStore, STORE_KINDS, type OpenStore } from './stores';
import { asHeaders, asMetadata } from './wire-send';

const ring = vectorRing();

/** One resource, reachable over both transports: writes answer with their HTTP status or gRPC code. */
interface Resource {
  write(value: string, fence: string): Promise<number>;
  /** What the resource holds: its writes in order, the last one the document. */
  history(): string[];
}

function overHttp(app: HttpApp): Resource {
  return {
    write: async (value, fence) => (await app.send('/doc', asHeaders({ fence: [fence] }), 'PUT', value)).status,
    history: () => app.stored,
  };
}

function overGrpc(grpc: RawGrpc): Resource {
  return {
    write: async (value, fence) => {
      const res = await grpc.put(value, asMetadata({ fence: [fence] }));
      return res.ok ? 0 : res.code;
    },
    history: () => grpc.stored,
  };
}

const OK = { http: 200, grpc: 0 };
const STALE = { http: 409, grpc: 9 }; // FAILED_PRECONDITION

describe.each(STORE_KINDS)('%s store', (kind) => {
  let open: OpenStore;
  const started: { close(): Promise<void> }[] = [];

  async function resources(options: { leaseEndSkewMs?: number } = {}): Promise<{ lock: string; http: Resource; grpc: Resource }> {
    const lock = uniqueName('kleppmann');
    const app = await startHttpApp(httpFenceGuard(open.store, { keys: ring, lock, ...options }));
    const grpc = await startRawGrpc([grpcFenceGuard(await open.another(), { keys: ring, lock, ...options })]);
    started.push(app, { close: () => grpc.stop() });
    return { lock, http: overHttp(app), grpc: overGrpc(grpc) };
  }

  beforeAll(async () => {
    open = await openStore(kind);
  }, 60_000);
  afterAll(async () => {
    for (const s of started) await s.close();
    await open?.stop();
  });

  it.each(['http', 'grpc'] as const)('%s: the paused holder is refused, no update lost, no false refusal', async (transport) => {
    const { lock, ...both } = await resources();
    const resource = both[transport];
    const a = signed({ lock, token: 11n }); // holder A's grant
    const b = signed({ lock, token: 12n }); // B's, granted after A's lease ran out while A was paused
    expect(await resource.write('a-1', a)).toBe(OK[transport]);
    expect(await resource.write('b-1', b)).toBe(OK[transport]);
    expect(await resource.write('a-2', a)).toBe(STALE[transport]); // A wakes and writes at once
    expect(await resource.write('b-2', b)).toBe(OK[transport]);
    expect(resource.history().slice(-3)).toEqual(['a-1', 'b-1', 'b-2']);
  });

  it.each(['http', 'grpc'] as const)(
    '%s, lease-end check on: the paused holder is refused after its lease ended though nobody newer wrote',
    async (transport) => {
      const { lock, ...both } = await resources({ leaseEndSkewMs: 500 });
      const resource = both[transport];
      const leaseEndMs = Date.now() + 1000;
      const a = signed({ lock, token: 21n, leaseEndMs });
      expect(await resource.write('a-1', a)).toBe(OK[transport]);
      // A is paused past its lease end and the allowance; the guard's clock tells (no sleep stands in for an event: the time is the event).
      await new Promise((resolve) => setTimeout(resolve, leaseEndMs + 500 - Date.now() + 50));
      expect(await resource.write('a-2', a)).toBe(STALE[transport]);
      expect(resource.history().slice(-1)).toEqual(['a-1']);
    },
  );

  it("negative control, the issue's forged token: a guard without keys lets it take the resource over; with keys it is refused", async () => {
    const lock = uniqueName('forged');
    const unsigned = await startHttpApp(httpFenceGuard(open.store, { lock }));
    const signedOnly = await startHttpApp(httpFenceGuard(await open.another(), { keys: ring, lock: `${lock}-signed` }));
    started.push(unsigned, signedOnly);
    const forged = { lock: [lock], token: ['18446744073709551615'] };
    const holder = signed({ lock, token: 31n });
    expect((await unsigned.send('/doc', asHeaders(forged), 'PUT', 'forger')).status).toBe(200);
    expect((await unsigned.send('/doc', asHeaders({ fence: [holder], lock: [lock], token: ['31'] }), 'PUT', 'holder')).status).toBe(409);
    expect(unsigned.stored).toEqual(['forger']); // the real holder is locked out
    expect((await signedOnly.send('/doc', asHeaders({ ...forged, lock: [`${lock}-signed`] }), 'PUT', 'forger')).status).toBe(403);
    expect((await signedOnly.send('/doc', asHeaders({ fence: [signed({ lock: `${lock}-signed`, token: 31n })] }), 'PUT', 'holder')).status).toBe(200);
    expect(signedOnly.stored).toEqual(['holder']);
  });
});
