// The holdfast dashboard: renders the overview the page was sent with (its first paint), then the
// server's overviews (server-sent events from /events), and shrinks each lease bar between them.
// Everything shown is set as text, never as HTML.
'use strict';

const $ = (id) => document.getElementById(id);
// The page's URL says what it shows (?prefix=, ?cursor=): a link or a bookmark shows the same.
const query = new URLSearchParams(location.search);
const state = { cursor: /^[0-9-]+$/.test(query.get('cursor') ?? '') ? query.get('cursor') : '0', prefix: query.get('prefix') ?? '', next: '0', source: null };
// Longest lease left seen per holder: the bar's full length (Inspect says what is left, not the lease).
const leaseFull = new Map();
const bars = [];

function connect() {
  if (state.source) state.source.close();
  const query = new URLSearchParams({ cursor: state.cursor, prefix: state.prefix });
  history.replaceState(null, '', `?${query}`);
  const source = new EventSource(`events?${query}`);
  state.source = source;
  setPill($('stream'), 'connecting', 'connecting');
  source.onopen = () => setPill($('stream'), 'live', 'live');
  source.onerror = () => setPill($('stream'), 'lost', 'reconnecting');
  source.onmessage = (event) => render(JSON.parse(event.data));
}

function setPill(element, stateName, text) {
  element.dataset.state = stateName;
  element.textContent = text;
}

function render(overview) {
  const { backend, grantsPerSecond, page, error } = overview;
  setPill($('backend'), backend.redisReachable ? 'ok' : 'down', backend.redisReachable ? 'Redis reachable' : 'Redis unreachable');
  $('quarantine').hidden = !backend.quarantine;
  $('quarantine').textContent = backend.quarantine ? `quarantine: ${backend.quarantine}` : '';
  renderRate(grantsPerSecond);
  $('error').hidden = !error && page.listable;
  $('error').textContent = error ? `cannot read the locks: ${error}` : page.listable ? '' : 'this backend (Redlock) cannot list its locks';
  state.next = page.next;
  $('next-page').disabled = page.next === '0';
  $('first-page').disabled = state.cursor === '0';
  $('page-info').textContent = `${page.locks.length} lock${page.locks.length === 1 ? '' : 's'} on this page${page.next === '0' ? '' : ', more on the next'}`;
  renderLocks(page.locks);
}

function renderRate(series) {
  const now = series.length ? series[series.length - 1] : 0;
  const peak = Math.max(1, ...series);
  $('rate-now').textContent = String(now);
  $('rate-peak').textContent = String(Math.max(0, ...series));
  const step = 300 / Math.max(1, series.length - 1);
  $('rate-line').setAttribute('points', series.map((v, i) => `${(i * step).toFixed(1)},${(40 - (v / peak) * 38).toFixed(1)}`).join(' '));
}

function renderLocks(locks) {
  const receivedAt = performance.now();
  const seen = new Set();
  const body = document.createDocumentFragment();
  bars.length = 0;
  for (const lock of locks) {
    const row = element('tr', { 'data-lock': lock.name });
    row.append(element('td', { class: 'name' }, ...breakableName(lock.name)));
    const holders = element('td', { class: 'holders' });
    for (const holder of lock.holders) {
      const key = `${lock.name}\u0000${holder.fencingToken}`;
      seen.add(key);
      const full = Math.max(leaseFull.get(key) ?? 0, holder.ttlMs);
      leaseFull.set(key, full);
      const bar = element('div', { class: 'lease-bar' });
      // The seconds left sit beside the bar, never on it: a full bar would cover them.
      const left = element('span', { class: 'lease-left' });
      const lease = element('div', { class: 'lease', title: 'lease left' }, bar);
      bars.push({ bar, left, expiresAt: receivedAt + holder.ttlMs, full });
      holders.append(element('div', { class: 'holder' },
        element('span', { class: 'owner' }, ownerText(holder)),
        element('span', { class: 'kind' }, kindOf(lock, holder)),
        element('span', { class: 'fencing' }, holder.fencingToken),
        element('span', { class: 'value', title: 'published value' }, holder.value),
        lease,
        left));
    }
    if (lock.holders.length === 0) holders.append(element('span', { class: 'hint' }, 'free (waiters are being served)'));
    row.append(holders, element('td', { class: 'waiters' }, String(lock.waiters)));
    body.append(row);
  }
  for (const key of leaseFull.keys()) if (!seen.has(key)) leaseFull.delete(key);
  $('locks').replaceChildren(body);
  $('empty').hidden = locks.length > 0;
  drawBars();
}

/** The kind of lock as its holders took it: a semaphore (a limit above one), shared (read) or exclusive. */
function kindOf(lock, holder) {
  if (lock.limit > 1) return `semaphore, ${lock.holders.length} of ${lock.limit}`;
  return holder.mode === 2 ? 'shared (read)' : 'exclusive';
}

/** A name that may wrap after each "/" (its path-like parts stay whole where they fit). */
function breakableName(name) {
  return name.split(/(?<=\/)/).flatMap((part, i) => (i === 0 ? [part] : [document.createElement('wbr'), part]));
}

function ownerText(holder) {
  const owner = holder.owner || '(no owner)';
  if (holder.holdCount === 0) return `${owner} (gone; lease running out)`;
  return holder.holdCount > 1 ? `${owner} ×${holder.holdCount}` : owner;
}

function element(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

function drawBars() {
  const now = performance.now();
  for (const { bar, left, expiresAt, full } of bars) {
    const ms = Math.max(0, expiresAt - now);
    bar.style.width = `${full > 0 ? (100 * ms) / full : 0}%`;
    left.textContent = `${(ms / 1000).toFixed(1)} s`;
  }
}

function animate() {
  drawBars();
  requestAnimationFrame(animate);
}

$('controls').addEventListener('submit', (event) => {
  event.preventDefault();
  state.prefix = $('prefix').value;
  state.cursor = '0';
  connect();
});
$('first-page').addEventListener('click', () => {
  state.cursor = '0';
  connect();
});
$('next-page').addEventListener('click', () => {
  state.cursor = state.next;
  connect();
});
$('prefix').value = state.prefix;
// The first paint: the overview the page came with, before the event stream has said anything.
const first = $('first-overview');
if (first.textContent) render(JSON.parse(first.textContent));
first.remove(); // read once: the page shows what it rendered, not a copy of the data
connect();
requestAnimationFrame(animate);
