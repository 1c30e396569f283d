/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The live dashboard (README "Dashboard") in a real headless Chromium: a real server process with
// --http-listen, locks taken and waited for over real gRPC channels, the page watched as it
// follows them through its server-sent events.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secureChannel } from '../../clients/ts/credentials';
import { hashApiKey, newApiKey } from '../../src/auth/api-keys';
import { freePort } from '../../src/redis/embedded';
import { countBars, launchChromium, oneShot, type TestBrowser } from '../support/browser';
import { connect, type TestClient } from '../support/client';
import { rawCalls } from '../support/raw-calls';
import { grantMany } from '../support/many-locks';
import { useServers } from '../support/fixture';
import { uniqueName, type TestRedis } from '../support/redis';
import { startServerProcess, type ServerProcess } from '../support/server';
import { waitFor } from '../support/wait';

/** Where the screenshot is saved (a CI artifact; the README shows a copy in docs/). */
const ARTIFACTS = join(__dirname, '..', '..', 'artifacts');
const WAIT_MS = 15_000;

let redis: TestRedis;
let server: ServerProcess;
let client: TestClient;
let peer: TestClient;
let chromium: TestBrowser;
let base: string;

const env = useServers(1, async () => {
  const httpPort = await freePort();
  base = `http://127.0.0.1:${httpPort}`;
  // A 30 s lease cap: the quarantine after the Redis restart below lasts 31 s, not 61.
  return ['--http-listen', `127.0.0.1:${httpPort}`, '--max-ttl-ms', '30000'];
});
beforeAll(async () => {
  [redis, server, client] = [env.redis, env.servers[0], env.clients[0]];
  peer = connect(server.addr, { 'grpc.use_local_subchannel_pool': 1 });
  chromium = await launchChromium();
}, 60_000);
afterAll(async () => {
  await chromium?.close();
  peer?.close();
});

/** A page showing only the locks whose names start with `prefix`. */
async function openFiltered(prefix: string): Promise<Page> {
  const page = await chromium.browser.newPage();
  await page.setViewport({ width: 1100, height: 420 });
  await page.goto(`${base}/`);
  await page.type('#prefix', prefix);
  await page.click('#controls button[type=submit]');
  await page.waitForFunction(() => document.getElementById('stream')?.dataset.state === 'live', { timeout: WAIT_MS });
  return page;
}

/** The row of lock `name` as the page shows it, or null when it is not there. */
function row(page: Page, name: string) {
  return page.evaluate((lock) => {
    const tr = [...document.querySelectorAll<HTMLElement>('#locks tr')].find((r) => r.dataset.lock === lock);
    if (!tr) return null;
    const bar = tr.querySelector<HTMLElement>('.lease-bar');
    return {
      text: tr.textContent ?? '',
      waiters: tr.querySelector('.waiters')?.textContent ?? '',
      holders: tr.querySelectorAll('.holder').length,
      barPercent: bar ? parseFloat(bar.style.width) : NaN,
    };
  }, name);
}

/**
 * Pairs of things shown in one holder line whose boxes overlap (text over a bar, text over text),
 * on the rows of `names`; with `probe`, the bar's track too, which its bar lies on (the control).
 */
function overlapping(page: Page, names: string[], probe = false) {
  return page.evaluate(
    (locks, control) => {
      const found: string[] = [];
      const meet = (a: DOMRect, b: DOMRect) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
      for (const tr of document.querySelectorAll<HTMLElement>('#locks tr')) {
        if (!locks.includes(tr.dataset.lock!)) continue;
        for (const holder of tr.querySelectorAll('.holder')) {
          const shown = [
            ...holder.querySelectorAll('.owner, .kind, .mode, .fencing, .value, .lease-bar, .lease-left'),
            ...(control ? [holder.querySelector('.lease')!] : []),
          ];
          const parts = shown.map((e) => ({ what: e.className, box: e.getBoundingClientRect() })).filter((p) => p.box.width > 0);
          parts.forEach((a, i) => parts.slice(i + 1).forEach((b) => meet(a.box, b.box) && found.push(`${tr.dataset.lock}: ${a.what} over ${b.what}`)));
        }
      }
      return found;
    },
    names,
    probe,
  );
}

/** The lock rows of a dumped DOM (`chromium --dump-dom`): lock name to the row's text. */
function rowsOfDump(dom: string): Map<string, string> {
  const body = /<tbody id="locks">([\s\S]*?)<\/tbody>/.exec(dom)?.[1] ?? '';
  const rows = new Map<string, string>();
  for (const [, name, cells] of body.matchAll(/<tr data-lock="([^"]*)">([\s\S]*?)<\/tr>/g))
    rows.set(
      name,
      cells
        .replace(/<[^>]*>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim(),
    );
  return rows;
}

/** Reads server-sent events from /events until `count` have come; returns them as sent. */
async function readEvents(query: string, count: number, headers: Record<string, string> = {}, from = base): Promise<string> {
  const res = await fetch(`${from}/events?${query}`, { headers });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = res.body!.getReader();
  let text = '';
  while (text.split('\n\n').length <= count) text += new TextDecoder().decode((await reader.read()).value);
  await reader.cancel();
  return text;
}

describe('dashboard', () => {
  it('shows a lock when taken, shrinks its lease bar, counts its waiter, drops it when released; grants per second', async () => {
    const prefix = uniqueName('dash');
    const name = `${prefix}/orders`;
    const page = await openFiltered(prefix);
    expect(await row(page, name)).toBeNull();

    const first = await client.acquire({ name, owner: 'billing-worker-1', ttlMs: '30000' });
    const shown = (await waitFor('the lock on the page', () => row(page, name), WAIT_MS))!;
    expect(shown.text).toContain('billing-worker-1');
    expect(shown.text).toContain('exclusive');
    expect(shown.text).toContain(first.fencingToken);
    expect(shown.waiters).toBe('0');
    expect(shown.barPercent).toBeGreaterThan(0);
    // Acquire is not renewed: its bar can only shrink.
    await waitFor('the lease bar to shrink', async () => (await row(page, name))!.barPercent < shown.barPercent - 1, WAIT_MS);

    const waiting = peer.acquire({ name, owner: 'billing-worker-2', ttlMs: '30000', waitTimeoutMs: '60000' });
    await waitFor('one waiter on the page', async () => (await row(page, name))?.waiters === '1', WAIT_MS);
    // Company for the screenshot: a shared lock with two readers, and a lock a Hold stream renews.
    const reports = `${prefix}/reports`;
    const readers = await Promise.all(['report-reader-a', 'report-reader-b'].map((owner) => client.acquire({ name: reports, owner, ttlMs: '20000', mode: 2 })));
    const leader = client.hold({ name: `${prefix}/leader`, owner: 'scheduler-7', ttlMs: '6000' });
    await leader.next((e) => !!e.acquired);
    await waitFor('two readers of the shared lock', async () => (await row(page, reports))?.holders === 2, WAIT_MS);
    expect((await row(page, reports))!.text).toContain('shared');
    await page.waitForFunction(() => Number(document.getElementById('rate-peak')?.textContent) >= 1, { timeout: WAIT_MS });
    // No label sits on a bar or on another label, whatever the lease left (a nearly full bar too).
    const shownNames = [name, reports, `${prefix}/leader`];
    expect(await overlapping(page, shownNames)).toEqual([]);
    expect(await overlapping(page, shownNames, true)).not.toEqual([]); // the check sees an overlap when there is one
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-live.png') });

    await client.release({ name, token: first.token });
    const second = await waiting;
    await waitFor(
      'the waiter as the holder',
      async () => {
        const now = await row(page, name);
        return now?.waiters === '0' && now.text.includes('billing-worker-2') && !now.text.includes('billing-worker-1');
      },
      WAIT_MS,
    );
    await peer.release({ name, token: second.token });
    await waitFor('the lock gone from the page', async () => (await row(page, name)) === null, WAIT_MS);
    leader.call.cancel();
    await Promise.all(readers.map((reader) => client.release({ name: reports, token: reader.token })));
    await page.close();
  });

  it("a one-shot headless screenshot shows the locks at first paint, each lock's kind as it was taken and its published value", async () => {
    const prefix = uniqueName('dash-first');
    const call = rawCalls(client.client);
    const taken = async (request: Parameters<typeof call.acquire>[0]) => {
      const { code, details, response } = await call.acquire({ ttlMs: '30000', ...request }).ended;
      expect([code, details, response?.acquired]).toEqual([0, '', true]);
      return response!;
    };
    // A value is anyone's text: one that tries to close the page's data block stays text.
    const orders = await taken({ name: `${prefix}/orders`, owner: 'billing-worker-1', value: 'batch </script><b>26</b>' });
    const readers = [
      await taken({ name: `${prefix}/reports`, owner: 'report-reader-a', mode: 2 }),
      await taken({ name: `${prefix}/reports`, owner: 'report-reader-b', mode: 2 }),
    ];
    const slots = [
      await taken({ name: `${prefix}/db-slots`, owner: 'etl-1', limit: 3 }),
      await taken({ name: `${prefix}/db-slots`, owner: 'etl-2', limit: 3 }),
    ];
    const leader = call.hold({ name: `${prefix}/leader`, owner: 'scheduler-7', ttlMs: '20000' });
    const { token } = (await leader.next((e) => !!e.acquired)).acquired!;
    expect((await call.setValue({ name: `${prefix}/leader`, token, value: '10.0.0.7:8080' }).ended).code).toBe(0);

    const url = `${base}/?${new URLSearchParams({ prefix })}`;
    const dom = await oneShot(url, 'dump-dom');
    expect(dom).toMatch(/id="backend"[^>]*>Redis reachable</);
    const rows = rowsOfDump(dom);
    expect([...rows.keys()]).toEqual(['db-slots', 'leader', 'orders', 'reports'].map((n) => `${prefix}/${n}`));
    const rowOf = (n: string) => rows.get(`${prefix}/${n}`)!;
    expect(rowOf('orders')).toMatch(/billing-worker-1 exclusive \d+ batch &lt;\/script&gt;&lt;b&gt;26&lt;\/b&gt;/);
    expect(dom).not.toContain('<b>26');
    expect(rowOf('leader')).toMatch(/scheduler-7 exclusive \d+ 10\.0\.0\.7:8080/);
    expect(rowOf('reports')).toMatch(/report-reader-a shared \(read\) \d+ .*report-reader-b shared \(read\)/);
    expect(rowOf('db-slots')).toMatch(/etl-1 semaphore, 2 of 3 \d+ .*etl-2 semaphore, 2 of 3/);
    expect(rowOf('db-slots')).not.toContain('exclusive');
    for (const grant of [orders, ...readers, ...slots]) expect(dom).not.toContain(grant.token);

    // The control: a page whose filter matches none of them shows none, and says so.
    const none = await oneShot(`${base}/?${new URLSearchParams({ prefix: `${prefix}-none` })}`, 'dump-dom');
    expect(rowsOfDump(none).size).toBe(0);
    expect(none).toMatch(/<p id="empty" class="hint">No lock/);

    // The picture itself: one lease bar per holder (six), counted in its pixels; none on the empty page.
    mkdirSync(ARTIFACTS, { recursive: true });
    const [shot, emptyShot] = [join(ARTIFACTS, 'dashboard.png'), join(ARTIFACTS, 'dashboard-empty.png')];
    await oneShot(url, { screenshot: shot });
    await oneShot(`${base}/?${new URLSearchParams({ prefix: `${prefix}-none` })}`, { screenshot: emptyShot });
    const LEASE_BLUE: [number, number, number] = [0x2f, 0x81, 0xf7];
    const BELOW_HEADER = 60;
    expect(await countBars(chromium.browser, shot, LEASE_BLUE, BELOW_HEADER)).toBe(6);
    expect(await countBars(chromium.browser, emptyShot, LEASE_BLUE, BELOW_HEADER)).toBe(0);

    leader.cancel();
    const release = (n: string, grant: { token: string }) => call.release({ name: `${prefix}/${n}`, token: grant.token }).ended;
    await Promise.all([release('orders', orders), ...readers.map((g) => release('reports', g)), ...slots.map((g) => release('db-slots', g))]);
  });

  it('never shows a token: not in the page, not in its event stream', async () => {
    const prefix = uniqueName('dash-secret');
    const names = [`${prefix}/a*?[x]`, `${prefix}/{b}%7D`]; // glob and hash-tag characters, through SCAN and back
    const grants = await Promise.all(names.map((name) => client.acquire({ name, owner: 'owner', ttlMs: '30000' })));
    const held = client.hold({ name: `${prefix}/c`, ttlMs: '3000' });
    const holdToken = (await held.next((e) => !!e.acquired)).acquired!.token;
    const tokens = [...grants.map((g) => g.token), holdToken];
    const page = await openFiltered(prefix);
    await waitFor('three locks on the page', async () => (await page.$$('#locks tr')).length === 3, WAIT_MS);
    for (const name of names) expect(await row(page, name)).not.toBeNull();
    const events = await readEvents(new URLSearchParams({ prefix }).toString(), 3);
    expect(events).toContain(`${prefix}/c`); // the stream carries the locks ...
    const html = await page.content();
    for (const token of tokens) {
      expect(html).not.toContain(token); // ... and never their tokens
      expect(events).not.toContain(token);
    }
    held.call.cancel();
    await Promise.all(grants.map((grant, i) => client.release({ name: names[i], token: grant.token })));
    await page.close();
  });

  it('is read-only: anything but GET or HEAD is refused', async () => {
    for (const path of ['/', '/events']) {
      const res = await fetch(`${base}${path}`, { method: 'POST', body: 'x' });
      expect(res.status).toBe(405);
    }
  });

  it('shows Redis unreachable while it is down, and reachable again once it is back', async () => {
    const page = await openFiltered(uniqueName('dash-none'));
    const pill = () => page.$eval('#backend', (e) => e.textContent);
    await waitFor('Redis reachable', async () => (await pill()) === 'Redis reachable', WAIT_MS);
    await redis.stop();
    await waitFor('Redis unreachable', async () => (await pill()) === 'Redis unreachable', WAIT_MS);
    expect(await page.$eval('#error', (e) => e.textContent)).toContain('cannot read the locks');
    await redis.restart();
    await waitFor('Redis reachable again', async () => (await pill()) === 'Redis reachable', 30_000);
    await page.close();
  }, 60_000);

  it('pages through 10 000 locks, a page at a time', async () => {
    const prefix = uniqueName('dash-many');
    const names = Array.from({ length: 10_000 }, (_, i) => `${prefix}/${String(i).padStart(5, '0')}`);
    await grantMany(redis.client, names, 'many', 120_000);
    const page = await openFiltered(prefix);
    const rowNames = () => page.$$eval('#locks tr', (rows) => rows.map((r) => (r as HTMLElement).dataset.lock!));
    const first = (await waitFor('a first page', async () => ((await rowNames()).length > 0 ? rowNames() : null), WAIT_MS))!;
    // A page is about 100 locks (one SCAN step past that may add some): never all 10 000.
    expect(first.length).toBeGreaterThanOrEqual(100);
    expect(first.length).toBeLessThanOrEqual(300);
    expect(await page.$eval('#next-page', (b) => (b as HTMLButtonElement).disabled)).toBe(false);
    await page.click('#next-page');
    const second = (await waitFor(
      'the next page',
      async () => {
        const now = await rowNames();
        return now.length > 0 && !now.includes(first[0]) ? now : null;
      },
      WAIT_MS,
    ))!;
    expect(second.filter((name) => first.includes(name))).toEqual([]);
    await page.close();
    // One lock among 10 000 by its name: found on the first page (SCAN's COUNT grows while it finds few).
    const one = await openFiltered(names[4321]);
    expect((await waitFor('the one lock', () => row(one, names[4321]), WAIT_MS))!.text).toContain('many');
    await one.close();
  }, 120_000);
});

describe('dashboard with API keys', () => {
  const keys = {
    aRead: { name: 'a-read', namespace: 'tenant-a', role: 'read', key: newApiKey() },
    aLock: { name: 'a-lock', namespace: 'tenant-a', role: 'lock', key: newApiKey() },
    bLock: { name: 'b-lock', namespace: 'tenant-b', role: 'lock', key: newApiKey() },
  };
  let dir: string;
  let file: string;
  let secured: ServerProcess;
  const writeConfig = (list: (typeof keys)[keyof typeof keys][]) => {
    const entries = list.map((k) => `  - { name: ${k.name}, sha256: ${hashApiKey(k.key)}, namespace: ${k.namespace}, role: ${k.role} }`);
    writeFileSync(file, `api-keys:\n${entries.join('\n')}\n`);
  };
  let securedBase: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'holdfast-dashboard-'));
    file = join(dir, 'holdfast.yaml');
    writeConfig(Object.values(keys));
    const httpPort = await freePort();
    securedBase = `http://127.0.0.1:${httpPort}`;
    secured = await startServerProcess(redis.url, ['--config', file, '--http-listen', `127.0.0.1:${httpPort}`, '--max-ttl-ms', '30000']);
  });
  afterAll(async () => {
    await secured?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const as = (apiKey: string) => connect(secured.addr, secureChannel({ apiKey }).options as object);

  it('asks for a key (Basic), refuses an unknown one, and shows a read key only its own namespace', async () => {
    const prefix = uniqueName('dash-auth');
    const [aClient, bClient] = [as(keys.aLock.key), as(keys.bLock.key)];
    // Waiting: the quarantine after the earlier Redis restart may still run.
    const a = await aClient.acquire({ name: `${prefix}/a`, owner: 'tenant-a-worker', ttlMs: '30000', waitTimeoutMs: '45000' }, 50_000);
    const b = await bClient.acquire({ name: `${prefix}/b`, owner: 'tenant-b-worker', ttlMs: '30000', waitTimeoutMs: '45000' }, 50_000);

    const anonymous = await fetch(`${securedBase}/`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    expect((await fetch(`${securedBase}/events`, { headers: { authorization: `Bearer ${newApiKey()}` } })).status).toBe(401);
    expect((await fetch(`${securedBase}/metrics`)).status).toBe(200); // the listener's own paths stay open

    const page = await chromium.browser.newPage();
    await page.authenticate({ username: 'dashboard', password: keys.aRead.key });
    await page.goto(`${securedBase}/`);
    await page.type('#prefix', prefix);
    await page.click('#controls button[type=submit]');
    await waitFor("tenant a's lock", () => row(page, `${prefix}/a`), WAIT_MS);
    expect(await row(page, `${prefix}/b`)).toBeNull();
    const html = await page.content();
    expect(html).not.toContain(a.token);
    await page.close();

    // A script with a Bearer key sees its own namespace the same way.
    const events = await readEvents(new URLSearchParams({ prefix }).toString(), 2, { authorization: `Bearer ${keys.bLock.key}` }, securedBase);
    expect(events).toContain(`${prefix}/b`);
    expect(events).not.toContain(`${prefix}/a`);
    expect(events).not.toContain(b.token);

    await aClient.release({ name: `${prefix}/a`, token: a.token });
    await bClient.release({ name: `${prefix}/b`, token: b.token });
    aClient.close();
    bClient.close();
  }, 90_000);

  it('ends an open event stream when a reload of the credentials revokes its key', async () => {
    const res = await fetch(`${securedBase}/events`, { headers: { authorization: `Bearer ${keys.bLock.key}` } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read(); // the first overview
    writeConfig([keys.aRead, keys.aLock]);
    secured.process.kill('SIGHUP');
    const ended = (async () => {
      for (;;) if ((await reader.read()).done) return true;
    })();
    expect(await ended).toBe(true);
    expect((await fetch(`${securedBase}/events`, { headers: { authorization: `Bearer ${keys.bLock.key}` } })).status).toBe(401);
  });
});
