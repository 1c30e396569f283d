// Redis URLs go into logs and health answers: never with their password.

/** The URL with its password masked ('***'); a string that is not a URL keeps no credential part. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@'); // not a URL: keep nothing that could be a credential
  }
}
