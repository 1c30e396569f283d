// A request's fence values as HTTP headers or gRPC metadata, each value a header line of its own
// (so a header "sent twice" really is two lines).
import { Metadata } from '@grpc/grpc-js';
import { FENCE_HEADERS, FENCE_METADATA, type FenceValues } from '../../clients/ts/fencing';

export function asHeaders(values: Partial<FenceValues>): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const field of ['fence', 'lock', 'token'] as const) {
    const v = values[field] ?? [];
    if (v.length > 0) headers[FENCE_HEADERS[field]] = v.length === 1 ? v[0] : v;
  }
  return headers;
}

export function asMetadata(values: Partial<FenceValues>): Metadata {
  const md = new Metadata();
  for (const field of ['fence', 'lock', 'token'] as const) for (const v of values[field] ?? []) md.add(FENCE_METADATA[field], v);
  return md;
}
