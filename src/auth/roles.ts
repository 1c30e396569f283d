// What each role may call. `lock` includes `read`: a client that takes a lock may look at it
// (etcd's readwrite includes read). `admin` may call everything, AdminService included.
import type { Role } from '../config/schema';

// A Session may be opened by any role: each of its operations is then allowed or refused as its
// unary RPC would be (transport/auth.ts opRefusal).
const READ = new Set([
  '/holdfast.v1.LockService/Inspect',
  '/holdfast.v1.LockService/CheckFencingToken',
  '/holdfast.v1.LockService/Watch',
  '/holdfast.v1.LockService/Session',
]);
const LOCK = new Set([
  ...READ,
  '/holdfast.v1.LockService/Acquire',
  '/holdfast.v1.LockService/Release',
  '/holdfast.v1.LockService/Renew',
  '/holdfast.v1.LockService/Hold',
  '/holdfast.v1.LockService/SetValue',
  '/holdfast.v1.LockService/AcquireSet',
  '/holdfast.v1.LockService/ReleaseSet',
  '/holdfast.v1.LockService/HoldSet',
]);

/** Calls outside holdfast's own services (health, reflection) need no credentials. */
export function needsCredentials(path: string): boolean {
  return path.startsWith('/holdfast.');
}

/** Whether `role` may call `path`; a holdfast method not listed here (a new one) is admin's only. */
export function roleAllows(role: Role, path: string): boolean {
  if (role === 'admin') return true;
  return (role === 'lock' ? LOCK : READ).has(path);
}
