// The server's fence keys: the one it signs with and the further public keys it publishes (a key
// being rotated in or out). Published signing key first, as GetFenceKeys and GET /fence-keys list them.
import type { GetFenceKeysResponse } from '../../gen/holdfast/v1/admin';
import { fenceString, type SignFence } from './fence';
import { jwkOf, type Jwk, type PublicFenceKey, type SigningKey } from './keys';
import type { LeaseClock } from './lease-clock';

export class FenceRing {
  /** The signing key first, then each verify key not already listed. */
  readonly published: PublicFenceKey[];

  constructor(
    readonly signing: SigningKey | undefined,
    verify: PublicFenceKey[] = [],
  ) {
    const all = signing ? [signing, ...verify] : verify;
    this.published = all.filter((key, i) => all.findIndex((k) => k.keyId === key.keyId) === i);
  }

  jwkSet(): { keys: Jwk[] } {
    return { keys: this.published.map(jwkOf) };
  }

  adminResponse(): GetFenceKeysResponse {
    return {
      signingKeyId: this.signing?.keyId ?? '',
      keys: this.published.map((k) => ({ keyId: k.keyId, algorithm: 'Ed25519', publicKey: k.publicKey })),
    };
  }

  /**
   * The one function that turns a grant of `namespace` into its signed fence: undefined without a
   * signing key (every fence field stays empty). A lease states its end by `clock`.
   */
  signerFor(namespace: string, clock: LeaseClock): SignFence | undefined {
    const key = this.signing;
    if (!key) return undefined;
    return (name, fencingToken, lease) =>
      fenceString(key.privateKey, key.keyId, namespace, name, fencingToken, lease && clock.unixMsAt(lease.leaseStart) + lease.ttlMs);
  }
}
