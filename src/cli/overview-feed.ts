// Follows the dashboard's event stream (GET /events on the server's --http-listen listener) from
// the command line: each overview as it comes, reconnecting a second after the stream breaks.
import type { Overview } from '../overview/overview';

export interface FeedOptions {
  /** host:port of the server's HTTP listener. */
  http: string;
  namePrefix: string;
  apiKey?: string;
  signal: AbortSignal;
  onOverview(overview: Overview): void;
  /** The stream broke (or could not be opened): why, before the next try. */
  onBroken(reason: string): void;
}

const RETRY_MS = 1000;

export async function followOverviews(options: FeedOptions): Promise<void> {
  const url = `http://${options.http}/events?${new URLSearchParams({ prefix: options.namePrefix })}`;
  const headers: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
  while (!options.signal.aborted) {
    try {
      const res = await fetch(url, { headers, signal: options.signal });
      if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${(await res.text()).trim()}`);
      await readEvents(res, options.onOverview);
      options.onBroken('the event stream ended');
    } catch (err) {
      if (options.signal.aborted) return;
      options.onBroken((err as Error).message);
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

/** Hands each `data:` event of a server-sent event stream to `onOverview` until the stream ends. */
async function readEvents(res: Response, onOverview: (overview: Overview) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = event
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n');
      if (data) onOverview(JSON.parse(data) as Overview);
    }
  }
}
