// Collects what an async iterator yields in the background, so a test can await the first item
// that matches (already seen or yet to come) without polling.
export interface Collected<T> {
  items: T[];
  /** The first item from index `from` on that matches; rejects after timeoutMs or if the iterator ends or fails first. */
  next(match: (item: T) => boolean, timeoutMs?: number, from?: number): Promise<T>;
  done: Promise<void>;
}

export function collect<T>(iterable: AsyncIterable<T>): Collected<T> {
  const items: T[] = [];
  const wakers = new Set<() => void>();
  let ended: unknown = null;
  const done = (async () => {
    try {
      for await (const item of iterable) {
        items.push(item);
        for (const wake of [...wakers]) wake();
      }
      ended = new Error('the iterator ended');
    } catch (err) {
      ended = err;
    }
    for (const wake of [...wakers]) wake();
  })();
  const next = (match: (item: T) => boolean, timeoutMs = 10_000, from = 0) =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        wakers.delete(look);
        reject(new Error(`timed out after ${timeoutMs} ms; saw ${JSON.stringify(items, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`));
      }, timeoutMs);
      const look = () => {
        const found = items.slice(from).find(match);
        if (found !== undefined || ended) {
          wakers.delete(look);
          clearTimeout(timer);
          if (found !== undefined) resolve(found);
          else reject(ended);
        }
      };
      wakers.add(look);
      look();
    });
  return { items, next, done };
}
