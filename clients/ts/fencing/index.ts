// The fencing kit: attach a grant's fence to requests (holder side), and guard a resource with it.
export {
  FENCE_HEADERS,
  FENCE_METADATA,
  MAX_FENCING_TOKEN,
  FenceError,
  encodeFence,
  decodeFence,
  type Fence,
  type FenceField,
  type FenceNames,
} from './wire';
export { parseSignedFence, signFence, fenceKeyId, MAX_SIGNED_FENCE_LENGTH, type SignedFence, type FenceClaims } from './signed';
export { FenceKeyRing, parseFenceKeys, readFenceKeys, fetchFenceKeys, type FenceJwk, type FetchFenceKeysOptions } from './keys';
export { admitFence, currentFence, type AdmittedFence, type FenceRules, type FenceValues } from './admit';
export { attachFenceHeaders, attachFenceMetadata, type HeaderTarget } from './attach';
export { DEFAULT_STORE_TIMEOUT_MS, FenceStoreUnavailableError, type FenceDecision, type FenceStore } from './store';
export { MemoryFenceStore } from './memory-store';
export { RedisFenceStore, DEFAULT_KEEP_MS, boundedRedisOptions, fenceKey, type RedisCommander, type RedisFenceStoreOptions } from './redis-store';
export {
  PostgresFenceStore,
  FENCE_TABLE_SQL,
  boundedPoolOptions,
  checkFence,
  withFence,
  fencedUpdate,
  type PostgresFenceStoreOptions,
  type SqlQueryable,
  type FencedUpdate,
} from './postgres-store';
export { LOCK_RULE_FAILED, type GuardOptions } from './judge';
export { grpcFenceGuard, fenceFromMetadata, fenceValuesOfMetadata, type GrpcFenceGuardOptions } from './grpc-guard';
export { httpFenceGuard, fenceFromHeaders, fenceValuesOfHeaders, fenceOf, type HttpFenceGuard, type HttpFenceGuardOptions } from './http-guard';
export { FenceRefusal, staleMessage, type Refusal, type RefusalError } from './refusal';
