// The fencing kit: attach a grant's fence to requests (holder side), and guard a resource with it.
export { FENCE_HEADERS, FENCE_METADATA, MAX_FENCING_TOKEN, FenceError, encodeFence, decodeFence, type Fence, type FenceField } from './wire';
export { attachFenceHeaders, attachFenceMetadata, type HeaderTarget } from './attach';
export type { FenceDecision, FenceStore } from './store';
export { MemoryFenceStore } from './memory-store';
export { RedisFenceStore, DEFAULT_KEEP_MS, fenceKey, type RedisCommander, type RedisFenceStoreOptions } from './redis-store';
export { PostgresFenceStore, FENCE_TABLE_SQL, checkFence, withFence, fencedUpdate, type SqlQueryable, type FencedUpdate } from './postgres-store';
export { grpcFenceGuard, fenceFromMetadata, type GrpcFenceGuardOptions } from './grpc-guard';
export { httpFenceGuard, fenceFromHeaders, fenceOf, type HttpFenceGuard, type HttpFenceGuardOptions } from './http-guard';
export { staleMessage, type Refusal } from './refusal';
