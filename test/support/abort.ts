/** Resolves with the reason `signal` aborts with (at once if it has already). */
export function abortReason<T = unknown>(signal: AbortSignal): Promise<T> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason as T);
    else signal.addEventListener('abort', () => resolve(signal.reason as T), { once: true });
  });
}
