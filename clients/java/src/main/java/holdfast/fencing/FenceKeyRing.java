package holdfast.fencing;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.time.Duration;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The public keys a guard accepts signed fences from: a JWK set (RFC 7517/8037) as the server publishes
 * it at {@code GET /fence-keys} and in {@code AdminService.GetFenceKeys}. Each key is checked on load
 * (OKP, Ed25519, 32 bytes, {@code kid} the id computed from {@code x}). A ring never changes: to rotate,
 * build a new ring and a new guard with it.
 *
 * <p>Verification uses the JDK's own Ed25519 (JCA, Java 15 and later), looked up by name, so the jar
 * still runs on Java 11 for everything else; on an older JDK building a ring fails saying so.
 */
public final class FenceKeyRing {
  /** The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the raw 32-byte key follows it. */
  private static final byte[] X509_PREFIX = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};
  private static final Duration FETCH_TIMEOUT = Duration.ofSeconds(10);

  private final Map<String, PublicKey> keys;

  private FenceKeyRing(Map<String, PublicKey> keys) {
    this.keys = Collections.unmodifiableMap(keys);
  }

  /**
   * A ring of the keys of {@code jwkSet} ({@code {"keys":[...]}}).
   *
   * @throws IllegalArgumentException naming the key (its kid and place) and what is wrong with it
   * @throws IllegalStateException on a JDK without Ed25519 (before Java 15)
   */
  public static FenceKeyRing fromJwkSet(String jwkSet) {
    return parse(jwkSet, "the JWK set");
  }

  /** A ring of the JWK set in the file {@code path}; errors name the file. */
  public static FenceKeyRing fromFile(Path path) throws IOException {
    String text;
    try {
      text = Files.readString(path, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IOException("cannot read the fence key file " + path + (e instanceof java.nio.file.NoSuchFileException
          ? ": there is no such file" : ": " + e.getMessage()), e);
    }
    return parse(text, "the fence key file " + path);
  }

  /** A ring of the JWK set fetched once from {@code url} (the server's {@code /fence-keys}), waiting up to 10 s. */
  public static FenceKeyRing fromUrl(URI url) throws IOException, InterruptedException {
    return fromUrl(url, FETCH_TIMEOUT);
  }

  /** A ring of the JWK set fetched once from {@code url}, waiting up to {@code timeout}; errors name the URL. */
  public static FenceKeyRing fromUrl(URI url, Duration timeout) throws IOException, InterruptedException {
    HttpResponse<String> response;
    try {
      response = HttpClient.newBuilder().connectTimeout(timeout).build()
          .send(HttpRequest.newBuilder(url).timeout(timeout).GET().build(), HttpResponse.BodyHandlers.ofString());
    } catch (java.net.http.HttpTimeoutException e) {
      throw new IOException("cannot fetch the fence keys from " + url + ": no answer within " + timeout.toMillis() + " ms", e);
    } catch (java.net.ConnectException e) {
      throw new IOException("cannot fetch the fence keys from " + url + ": the connection was refused or failed "
          + "(is the holdfast server's HTTP listener there?)", e);
    } catch (IOException e) {
      throw new IOException("cannot fetch the fence keys from " + url + ": " + e.getMessage(), e);
    }
    if (response.statusCode() != 200) {
      throw new IOException("the fence keys at " + url + " answered HTTP " + response.statusCode() + ", not 200");
    }
    return parse(response.body(), "the fence keys at " + url);
  }

  /** The id of a raw 32-byte Ed25519 public key: the first 16 characters of base64url(SHA-256(key)). */
  public static String keyId(byte[] publicKey) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(publicKey);
      return Base64.getUrlEncoder().withoutPadding().encodeToString(digest).substring(0, 16);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JVM has no SHA-256", e);
    }
  }

  /** The ids of the ring's keys, in the set's order. */
  public Set<String> keyIds() {
    return keys.keySet();
  }

  /**
   * Checks a signed fence (as sent in {@code Holdfast-Fence}): its form, its key, its signature. The
   * namespace, the lock and the lease end are the guard's to check ({@link FenceGuard}).
   *
   * @throws FenceRefusal {@code malformed_fence}, {@code unknown_fence_key} or {@code bad_fence_signature}
   */
  public Fence verify(String signedFence) throws FenceRefusal {
    try {
      return verify(SignedFence.parse(signedFence, FenceWire.HTTP_SIGNED));
    } catch (BadFenceException e) {
      throw FenceRefusal.of(e);
    }
  }

  Fence verify(SignedFence fence) throws FenceRefusal {
    PublicKey key = keys.get(fence.keyId);
    if (key == null) {
      throw new FenceRefusal(FenceRefusal.Reason.UNKNOWN_KEY, "fence signed by unknown key \"" + fence.keyId + "\"",
          "key_id", fence.keyId);
    }
    boolean good;
    try {
      Signature verifier = Signature.getInstance("Ed25519");
      verifier.initVerify(key);
      verifier.update(fence.signed);
      good = verifier.verify(fence.signature);
    } catch (GeneralSecurityException e) {
      good = false; // a signature the JDK cannot even read does not verify
    }
    if (!good) {
      throw new FenceRefusal(FenceRefusal.Reason.BAD_SIGNATURE,
          "fence signature does not verify with key \"" + fence.keyId + "\"", "key_id", fence.keyId);
    }
    return new Fence(fence);
  }

  private static FenceKeyRing parse(String text, String source) {
    KeyFactory factory = ed25519();
    JsonArray list;
    try {
      JsonElement set = JsonParser.parseString(text);
      JsonElement found = set.isJsonObject() ? set.getAsJsonObject().get("keys") : null;
      if (found == null || !found.isJsonArray()) {
        throw new IllegalArgumentException(source + " is not a JWK set: it has no \"keys\" list");
      }
      list = found.getAsJsonArray();
    } catch (JsonParseException e) {
      throw new IllegalArgumentException(source + " is not valid JSON", e);
    }
    if (list.size() == 0) {
      throw new IllegalArgumentException(source + " has no keys");
    }
    Map<String, PublicKey> keys = new LinkedHashMap<>();
    for (int i = 0; i < list.size(); i++) {
      JsonObject jwk = list.get(i).isJsonObject() ? list.get(i).getAsJsonObject() : new JsonObject();
      String kid = member(jwk, "kid");
      String which = "key " + (kid == null ? "without a kid" : "\"" + kid + "\"") + " (number " + (i + 1) + " in " + source + ")";
      if (!"OKP".equals(member(jwk, "kty")) || !"Ed25519".equals(member(jwk, "crv"))) {
        throw new IllegalArgumentException(which + " is not an Ed25519 key: kty must be \"OKP\" and crv \"Ed25519\"");
      }
      byte[] raw = null;
      String x = member(jwk, "x");
      try {
        raw = x == null ? null : Base64.getUrlDecoder().decode(x);
      } catch (IllegalArgumentException e) {
        raw = null;
      }
      if (raw == null || raw.length != 32) {
        throw new IllegalArgumentException(which + " has an x that is not 32 bytes in base64url");
      }
      String id = keyId(raw);
      if (!id.equals(kid)) {
        throw new IllegalArgumentException(which + ": its kid must be \"" + id + "\", the id computed from its x");
      }
      byte[] der = new byte[X509_PREFIX.length + raw.length];
      System.arraycopy(X509_PREFIX, 0, der, 0, X509_PREFIX.length);
      System.arraycopy(raw, 0, der, X509_PREFIX.length, raw.length);
      try {
        keys.put(id, factory.generatePublic(new X509EncodedKeySpec(der)));
      } catch (GeneralSecurityException e) {
        throw new IllegalArgumentException(which + " is not a valid Ed25519 public key", e);
      }
    }
    return new FenceKeyRing(keys);
  }

  private static String member(JsonObject jwk, String name) {
    JsonElement value = jwk.get(name);
    return value != null && value.isJsonPrimitive() && value.getAsJsonPrimitive().isString() ? value.getAsString() : null;
  }

  private static KeyFactory ed25519() {
    try {
      return KeyFactory.getInstance("Ed25519");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("signed fences need Java 15 or later, whose JDK verifies Ed25519; this JVM is Java "
          + Runtime.version(), e);
    }
  }
}
