package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import holdfast.fencing.Fence;
import holdfast.fencing.FenceGuard;
import holdfast.fencing.FenceKeyRing;
import holdfast.fencing.FenceRefusal;
import holdfast.fencing.FenceWire;
import holdfast.fencing.MemoryFenceStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * clients/conformance/signed-fence.json: every vector (sign, verify, bind, leaseEnd, headers, badKeys)
 * through the kit's own ring and guard, and each wrong implementation (negative controls) fails the file.
 */
class SignedFenceConformanceTest {
  private static JsonObject vectors;
  private static String ringJson;

  @BeforeAll
  static void load() throws Exception {
    vectors = FenceSigner.vectors();
    ringJson = vectors.getAsJsonObject("keys").getAsJsonObject("ring").toString();
  }

  /** What a kit does with each kind of vector; answers are the vectors' words. */
  interface Kit {
    /** "ok:" and the fence's fields, or the error: malformed, unknown_key, bad_signature. */
    default String verify(FenceKeyRing ring, String fence) throws Exception {
      try {
        Fence verified = ring.verify(fence);
        return "ok:" + verified.keyId() + "|" + verified.namespace() + "|" + verified.lock() + "|" + verified.tokenText()
            + "|" + text(verified.leaseEndMs());
      } catch (FenceRefusal refusal) {
        return word(refusal);
      }
    }

    /** Refusal of {@link #guard}: the vectors' word, or "ok". */
    default String bind(String fence, String namespace, String lock) throws Exception {
      return admit(FenceGuard.builder(new MemoryFenceStore()).keys(FenceKeyRing.fromJwkSet(ringJson)).namespace(namespace),
          Map.of("fence", List.of(fence)), lock);
    }

    default boolean leaseEnd(String fence, long nowMs, long skewMs) throws Exception {
      return "ok".equals(admit(FenceGuard.builder(new MemoryFenceStore()).keys(FenceKeyRing.fromJwkSet(ringJson))
          .namespace(fenceNamespace(fence)).leaseEndSkew(Duration.ofMillis(skewMs)).clock(() -> nowMs),
          Map.of("fence", List.of(fence)), FenceWire.decode(fence.split(":")[3])));
    }

    /** "signed", "unsigned", or the error: malformed, missing, signed_required. */
    default String headers(Map<String, List<String>> headers, boolean acceptUnsigned) throws Exception {
      FenceGuard guard = FenceGuard.builder(new MemoryFenceStore()).keys(FenceKeyRing.fromJwkSet(ringJson))
          .acceptUnsigned(acceptUnsigned).build();
      try {
        return guard.admit(FenceGuard.Transport.HTTP, name -> headers.getOrDefault(wireField(name), List.of()), "orders")
            .signed() ? "signed" : "unsigned";
      } catch (FenceRefusal refusal) {
        return word(refusal);
      }
    }

    /** True when a ring with this one key loads. */
    default boolean loads(JsonObject jwk) {
      try {
        FenceKeyRing.fromJwkSet("{\"keys\":[" + jwk + "]}");
        return true;
      } catch (IllegalArgumentException e) {
        return false;
      }
    }

    default String admit(FenceGuard.Builder guard, Map<String, List<String>> headers, String lock) throws Exception {
      try {
        guard.build().admit(FenceGuard.Transport.HTTP, name -> headers.getOrDefault(wireField(name), List.of()), lock);
        return "ok";
      } catch (FenceRefusal refusal) {
        return word(refusal);
      }
    }
  }

  /** The kit as shipped. */
  static final Kit KIT = new Kit() {};

  static String text(OptionalLong value) {
    return value.isPresent() ? Long.toUnsignedString(value.getAsLong()) : "none";
  }

  static String word(FenceRefusal refusal) {
    switch (refusal.reason()) {
      case MISSING: return "missing";
      case MALFORMED: return "malformed";
      case SIGNED_FENCE_REQUIRED: return "signed_required";
      case UNKNOWN_KEY: return "unknown_key";
      case BAD_SIGNATURE: return "bad_signature";
      case ANOTHER_NAMESPACE: return "wrong_namespace";
      case ANOTHER_LOCK: return "wrong_lock";
      default: return refusal.reason().error();
    }
  }

  /** The vectors' header key ("fence", "lock", "token") of an HTTP header name. */
  static String wireField(String header) {
    return header.equals(FenceWire.HTTP_SIGNED) ? "fence" : header.equals(FenceWire.HTTP_LOCK) ? "lock" : "token";
  }

  static String fenceNamespace(String fence) {
    return FenceWire.decode(fence.split(":")[2]);
  }

  /** Every vector the kit answers differently from the file, by section and name. */
  static List<String> mismatches(Kit kit) throws Exception {
    List<String> found = new ArrayList<>();
    FenceKeyRing ring = FenceKeyRing.fromJwkSet(ringJson);
    for (JsonElement each : vectors.getAsJsonArray("verify")) {
      JsonObject v = each.getAsJsonObject();
      String want = v.has("error") && !v.get("error").isJsonNull() ? v.get("error").getAsString() : expectText(v.getAsJsonObject("expect"));
      String got = kit.verify(ring, v.get("fence").getAsString());
      if (!want.equals(got)) {
        found.add("verify: " + v.get("name").getAsString() + ": got " + got + ", want " + want);
      }
    }
    for (JsonElement each : vectors.getAsJsonArray("bind")) {
      JsonObject v = each.getAsJsonObject();
      String want = v.get("error").isJsonNull() ? "ok" : v.get("error").getAsString();
      String got = kit.bind(v.get("fence").getAsString(), v.get("namespace").getAsString(), v.get("lock").getAsString());
      if (!want.equals(got)) {
        found.add("bind: " + v.get("name").getAsString() + ": got " + got + ", want " + want);
      }
    }
    for (JsonElement each : vectors.getAsJsonArray("leaseEnd")) {
      JsonObject v = each.getAsJsonObject();
      boolean got = kit.leaseEnd(v.get("fence").getAsString(), Long.parseUnsignedLong(v.get("nowMs").getAsString()),
          Long.parseLong(v.get("skewMs").getAsString()));
      if (got != v.get("admitted").getAsBoolean()) {
        found.add("leaseEnd: " + v.get("name").getAsString() + ": admitted " + got);
      }
    }
    for (JsonElement each : vectors.getAsJsonArray("headers")) {
      JsonObject v = each.getAsJsonObject();
      Map<String, List<String>> headers = new HashMap<>();
      for (Map.Entry<String, JsonElement> header : v.getAsJsonObject("headers").entrySet()) {
        List<String> values = new ArrayList<>();
        header.getValue().getAsJsonArray().forEach(value -> values.add(value.getAsString()));
        headers.put(header.getKey(), values);
      }
      String want = v.has("error") ? v.get("error").getAsString() : v.get("expect").getAsString();
      String got = kit.headers(headers, v.get("acceptUnsigned").getAsBoolean());
      if (!want.equals(got)) {
        found.add("headers: " + v.get("name").getAsString() + ": got " + got + ", want " + want);
      }
    }
    for (JsonElement each : vectors.getAsJsonArray("badKeys")) {
      JsonObject v = each.getAsJsonObject();
      if (kit.loads(v.getAsJsonObject("jwk"))) {
        found.add("badKeys: " + v.get("name").getAsString() + ": loaded");
      }
    }
    JsonArray ringKeys = vectors.getAsJsonObject("keys").getAsJsonObject("ring").getAsJsonArray("keys");
    for (JsonElement key : ringKeys) {
      if (!kit.loads(key.getAsJsonObject())) {
        found.add("keys: the ring's key " + key.getAsJsonObject().get("kid") + " did not load");
      }
    }
    return found;
  }

  private static String expectText(JsonObject expect) {
    return "ok:" + expect.get("keyId").getAsString() + "|" + expect.get("namespace").getAsString() + "|"
        + expect.get("lock").getAsString() + "|" + expect.get("token").getAsString() + "|"
        + (expect.get("leaseEndMs").isJsonNull() ? "none" : expect.get("leaseEndMs").getAsString());
  }

  @Test
  void theKitAnswersEveryVector() throws Exception {
    assertEquals(List.of(), mismatches(KIT));
    int count = 0;
    for (String section : List.of("verify", "bind", "leaseEnd", "headers", "badKeys")) {
      count += vectors.getAsJsonArray(section).size();
    }
    assertTrue(count > 50, "only " + count + " vectors read");
  }

  @Test
  void theTestSignerWritesTheSignVectors() throws Exception {
    for (JsonElement each : vectors.getAsJsonArray("sign")) {
      JsonObject v = each.getAsJsonObject();
      String keyId = v.get("fence").getAsString().split(":")[1];
      FenceSigner signer = FenceSigner.of(keyId);
      String fence = signer.sign(v.get("namespace").getAsString(), v.get("lock").getAsString(),
          Long.parseUnsignedLong(v.get("token").getAsString()),
          v.get("leaseEndMs").isJsonNull() ? null : Long.parseUnsignedLong(v.get("leaseEndMs").getAsString()));
      assertEquals(v.get("fence").getAsString(), fence, v.get("name").getAsString());
    }
  }

  @Test
  void theRingComputesKeyIdsAndNamesABadKey() throws Exception {
    assertEquals(List.of(FenceSigner.FIRST, FenceSigner.SECOND), new ArrayList<>(FenceKeyRing.fromJwkSet(ringJson).keyIds()));
    JsonObject bad = vectors.getAsJsonArray("badKeys").get(0).getAsJsonObject().getAsJsonObject("jwk");
    IllegalArgumentException refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> FenceKeyRing.fromJwkSet("{\"keys\":[" + bad + "]}"));
    assertTrue(refused.getMessage().contains("\"" + bad.get("kid").getAsString() + "\""), refused.getMessage());
    assertTrue(refused.getMessage().contains(FenceSigner.FIRST), refused.getMessage()); // the id it should have
  }

  @Test
  void aRingFromAFileOrAUrlNamesWhereItFailed() throws Exception {
    java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("holdfast-java-keys");
    try {
      java.nio.file.Path file = dir.resolve("fence-keys.json");
      java.nio.file.Files.writeString(file, ringJson);
      assertEquals(List.of(FenceSigner.FIRST, FenceSigner.SECOND), new ArrayList<>(FenceKeyRing.fromFile(file).keyIds()));
      java.io.IOException missing = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
          () -> FenceKeyRing.fromFile(dir.resolve("none.json")));
      assertTrue(missing.getMessage().contains("none.json") && missing.getMessage().contains("no such file"), missing.getMessage());
      int port = Support.freePort(); // nothing listens there
      java.net.URI url = java.net.URI.create("http://127.0.0.1:" + port + "/fence-keys");
      java.io.IOException refused = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
          () -> FenceKeyRing.fromUrl(url));
      assertTrue(refused.getMessage().contains(url.toString()), refused.getMessage());
    } finally {
      Support.deleteTree(dir);
    }
  }

  @Test
  void aRingIsFetchedOnceFromAUrl() throws Exception {
    java.util.concurrent.atomic.AtomicInteger gets = new java.util.concurrent.atomic.AtomicInteger();
    com.sun.net.httpserver.HttpServer server = com.sun.net.httpserver.HttpServer.create(
        new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/fence-keys", exchange -> {
      gets.incrementAndGet();
      byte[] body = ringJson.getBytes(java.nio.charset.StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    try {
      FenceKeyRing fetched = FenceKeyRing.fromUrl(java.net.URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/fence-keys"));
      String fence = vectors.getAsJsonArray("verify").get(0).getAsJsonObject().get("fence").getAsString();
      fetched.verify(fence);
      fetched.verify(fence);
      assertEquals(1, gets.get());
    } finally {
      server.stop(0);
    }
  }

  // Negative controls: each wrong kit fails the file where it is wrong.

  private static void failsAt(Kit wrong, String where) throws Exception {
    List<String> found = mismatches(wrong);
    assertTrue(found.stream().anyMatch(m -> m.startsWith(where)), "expected a mismatch at " + where + ", got " + found);
  }

  @Test
  void aVerifierThatSkipsTheSignatureFails() throws Exception {
    failsAt(new Kit() {
      @Override
      public String verify(FenceKeyRing ring, String fence) throws Exception {
        String got = Kit.super.verify(ring, fence);
        return got.equals("bad_signature") || got.equals("unknown_key") ? "ok" : got;
      }
    }, "verify: forged token");
  }

  @Test
  void aGuardThatMatchesTheLockByPrefixFails() throws Exception {
    failsAt(new Kit() {
      @Override
      public String bind(String fence, String namespace, String lock) throws Exception {
        String signedLock = FenceWire.decode(fence.split(":")[3]);
        String got = admit(FenceGuard.builder(new MemoryFenceStore()).keys(FenceKeyRing.fromJwkSet(ringJson))
            .namespace(namespace), Map.of("fence", List.of(fence)), signedLock);
        return got.equals("ok") && !lock.startsWith(signedLock) ? "wrong_lock" : got;
      }
    }, "bind: a lock whose name only starts the same");
  }

  @Test
  void aGuardThatIgnoresTheUnsignedHeadersDisagreementFails() throws Exception {
    failsAt(new Kit() {
      @Override
      public String headers(Map<String, List<String>> headers, boolean acceptUnsigned) throws Exception {
        Map<String, List<String>> only = new HashMap<>(headers);
        if (only.containsKey("fence")) {
          only.remove("lock");
          only.remove("token");
        }
        return Kit.super.headers(only, acceptUnsigned);
      }
    }, "headers: unsigned token disagrees");
  }

  @Test
  void aGuardThatKeepsTheFirstOfDuplicateHeadersFails() throws Exception {
    failsAt(new Kit() {
      @Override
      public String headers(Map<String, List<String>> headers, boolean acceptUnsigned) throws Exception {
        Map<String, List<String>> first = new HashMap<>();
        headers.forEach((name, values) -> first.put(name, values.subList(0, 1)));
        return Kit.super.headers(first, acceptUnsigned);
      }
    }, "headers: signed fence twice");
  }

  @Test
  void aLeaseEndCheckWithoutTheSkewFails() throws Exception {
    failsAt(new Kit() {
      @Override
      public boolean leaseEnd(String fence, long nowMs, long skewMs) throws Exception {
        return Kit.super.leaseEnd(fence, nowMs, 0);
      }
    }, "leaseEnd: at the end plus the skew");
  }

  @Test
  void aLoaderThatTrustsTheKidFails() throws Exception {
    failsAt(new Kit() {
      @Override
      public boolean loads(JsonObject jwk) {
        JsonObject trusted = jwk.deepCopy();
        try {
          byte[] x = java.util.Base64.getUrlDecoder().decode(jwk.get("x").getAsString());
          trusted.addProperty("kid", FenceKeyRing.keyId(x)); // whatever kid it claims, take the computed one
        } catch (IllegalArgumentException e) {
          // x unreadable: leave it as it is
        }
        return Kit.super.loads(trusted);
      }
    }, "badKeys: kid does not match x");
  }
}
