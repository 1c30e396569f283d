// Who may see the dashboard: with API keys configured, a key whose role may Inspect (read, lock or
// admin), shown only its own namespace's locks. A browser sends the key by HTTP Basic
// authentication (the key as the password; the browser asks for it once and sends it with the
// page's event stream too); scripts may send `authorization: Bearer <key>`.
import type { IncomingMessage } from 'node:http';
import type { Principal } from '../auth/credentials';
import { roleAllows } from '../auth/roles';

/** What the dashboard shows is what Inspect shows. */
const READ_PATH = '/holdfast.v1.LockService/Inspect';

export type Access = { namespace: string } | { status: 401 | 403; message: string };

/** The key in an Authorization header: Basic (its password, else its user name) or Bearer. */
export function presentedKey(header: string | undefined): string | undefined {
  const bearer = /^Bearer +(\S+)$/i.exec(header ?? '');
  if (bearer) return bearer[1];
  const basic = /^Basic +([A-Za-z0-9+/=]+)$/i.exec(header ?? '');
  if (!basic) return undefined;
  const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const [user, password] = colon < 0 ? [decoded, ''] : [decoded.slice(0, colon), decoded.slice(colon + 1)];
  return password || user || undefined;
}

export function accessOf(req: IncomingMessage, principalOfKey: (key: string | undefined) => Principal | undefined): Access {
  const principal = principalOfKey(presentedKey(req.headers.authorization));
  if (!principal) return { status: 401, message: 'this server requires an API key with the read role: give it as the password' };
  if (!roleAllows(principal.role, READ_PATH)) return { status: 403, message: `API key "${principal.name}" may not read locks` };
  return { namespace: principal.namespace };
}
