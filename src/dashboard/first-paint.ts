// The page's first paint: index.html is sent with the overview of the moment inside it (a JSON
// data block, which the page's own script renders before the load event), so a browser or a
// one-shot headless screenshot shows the locks at once, not "connecting…" until the first
// server-sent event. A data block is not run, so the page's script-src 'self' still holds.
import type { IncomingMessage } from 'node:http';
import { MAX_PAGE_SIZE, type PageRequest } from '../overview/lock-page';
import type { Overview } from '../overview/overview';

const DEFAULT_PAGE_SIZE = 100;

/** Where the page's data block goes in index.html. */
const SLOT = '<script id="first-overview" type="application/json"></script>';

/** What the page (and its event stream) shows: ?cursor=, ?prefix= and ?size= of its URL. */
export function pageRequestOf(req: IncomingMessage): PageRequest {
  const query = new URL(req.url ?? '/', 'http://dashboard').searchParams;
  const size = Math.min(MAX_PAGE_SIZE, Math.max(1, Number(query.get('size')) || DEFAULT_PAGE_SIZE));
  const cursor = query.get('cursor') ?? '';
  return { cursor: /^[0-9-]+$/.test(cursor) ? cursor : '0', namePrefix: query.get('prefix') ?? '', size };
}

/** One overview as the page reads it, from its data block or from an event. */
export function overviewMessage(overview: Overview, request: PageRequest): string {
  return JSON.stringify({ ...overview, at: Date.now(), cursor: request.cursor, prefix: request.namePrefix });
}

/** Splits index.html at its data block once, so each page is three pieces joined. */
export function firstPaintTemplate(html: string): (message: string) => Buffer {
  const at = html.indexOf(SLOT);
  if (at < 0) throw new Error(`web/dashboard/index.html has no ${SLOT}`);
  const open = SLOT.slice(0, SLOT.indexOf('</script>'));
  const before = html.slice(0, at) + open;
  const after = html.slice(at + open.length);
  // Lock names and values are anyone's text: no "<" may close the block or open a comment.
  return (message) => Buffer.from(before + message.replace(/</g, '\\u003c') + after);
}
