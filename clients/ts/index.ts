// The holdfast TypeScript SDK.
export { HoldfastClient, type HoldfastClientOptions, type HolderInfo, type LockInfo, type FencingTokenCheck, type Mode } from './client';
export { secureChannel, type ClientTls, type ConnectionSecurity } from './credentials';
export { NotAcquiredError, LeaseLostError, DeadlockError, isDeadlock, type ErrorStatus, type LeaseLossSource } from './errors';
export { checkAddress, InvalidAddressError } from './address';
export { explainConnectionFailure, type ConnectionKind } from './connection-errors';
export { Lease } from './lease';
export { Leadership, campaign, observe, type Leader, type CampaignOptions, type ObserveOptions } from './election';
export type { LockChange, WatchEventName } from './watch';
export { LeaseSet, LockSet, type SetMemberInfo } from './lock-set';
export { Lock, type ReleaseResult } from './lock';
export { isServiceError, type UnaryCalls } from './rpc';
export { acquireRequest, holdRequest, type AcquireOptions, type HoldOptions, type LockOptions } from './options';
export { LockMode, LostReason } from '../../gen/holdfast/v1/lock';
export * from './fencing';
