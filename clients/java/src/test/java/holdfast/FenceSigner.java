package holdfast;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import holdfast.fencing.FenceKeyRing;
import holdfast.fencing.FenceWire;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;

/**
 * Signs fences in tests with the RFC 8032 test seeds of clients/conformance/signed-fence.json (never
 * outside tests), as a holdfast server would: the JDK's Ed25519 by name, the key given as PKCS#8.
 */
final class FenceSigner {
  /** The DER prefix of an Ed25519 PKCS#8 private key (RFC 8410): the 32-byte seed follows it. */
  private static final byte[] PKCS8_PREFIX = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70,
      0x04, 0x22, 0x04, 0x20};

  final String keyId;
  private final PrivateKey key;

  private FenceSigner(String keyId, String seedHex) throws GeneralSecurityException {
    this.keyId = keyId;
    byte[] seed = new byte[32];
    for (int i = 0; i < 32; i++) {
      seed[i] = (byte) Integer.parseInt(seedHex.substring(2 * i, 2 * i + 2), 16);
    }
    byte[] der = new byte[PKCS8_PREFIX.length + 32];
    System.arraycopy(PKCS8_PREFIX, 0, der, 0, PKCS8_PREFIX.length);
    System.arraycopy(seed, 0, der, PKCS8_PREFIX.length, 32);
    this.key = KeyFactory.getInstance("Ed25519").generatePrivate(new PKCS8EncodedKeySpec(der));
  }

  static JsonObject vectors() throws IOException {
    return JsonParser.parseString(Files.readString(Support.repoRoot().resolve("clients/conformance/signed-fence.json")))
        .getAsJsonObject();
  }

  /** The vectors' ring (two keys), the first signing. */
  static final String FIRST = "If4x36FUomFia_hU";
  static final String SECOND = "OfcT0KZEJT8EUpQh";
  /** A key outside the ring. */
  static final String OUTSIDER = "2sBz4BI73qWd2bO9";

  /** The signer of the vectors' key {@code keyId}. */
  static FenceSigner of(String keyId) throws IOException, GeneralSecurityException {
    return new FenceSigner(keyId, vectors().getAsJsonObject("keys").getAsJsonObject("seeds").get(keyId).getAsString());
  }

  /** A JWK set of the vectors' keys named. */
  static FenceKeyRing ring(String... keyIds) throws IOException {
    JsonObject keys = vectors().getAsJsonObject("keys");
    StringBuilder set = new StringBuilder("{\"keys\":[");
    for (String id : keyIds) {
      JsonObject found = keys.get("outsider").getAsJsonObject();
      for (com.google.gson.JsonElement each : keys.getAsJsonObject("ring").getAsJsonArray("keys")) {
        if (each.getAsJsonObject().get("kid").getAsString().equals(id)) {
          found = each.getAsJsonObject();
        }
      }
      set.append(set.charAt(set.length() - 1) == '[' ? "" : ",").append(found);
    }
    return FenceKeyRing.fromJwkSet(set.append("]}").toString());
  }

  /** A signed fence; {@code leaseEndMs} null states no end. */
  String sign(String namespace, String lock, long token, Long leaseEndMs) throws GeneralSecurityException {
    String body = "v1:" + keyId + ":" + FenceWire.encodeLock(namespace) + ":" + FenceWire.encodeLock(lock) + ":"
        + Long.toUnsignedString(token) + ":" + (leaseEndMs == null ? "" : Long.toUnsignedString(leaseEndMs));
    Signature signer = Signature.getInstance("Ed25519");
    signer.initSign(key);
    signer.update(body.getBytes(StandardCharsets.US_ASCII));
    return body + ":" + Base64.getUrlEncoder().withoutPadding().encodeToString(signer.sign());
  }

  String sign(String lock, long token, Long leaseEndMs) throws GeneralSecurityException {
    return sign("default", lock, token, leaseEndMs);
  }
}
