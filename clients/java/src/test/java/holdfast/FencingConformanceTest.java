package holdfast;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import holdfast.fencing.BadFenceException;
import holdfast.fencing.Fence;
import holdfast.fencing.FenceAttach;
import holdfast.fencing.FenceCheck;
import holdfast.fencing.FenceWire;
import holdfast.fencing.RedisFenceStore;
import io.grpc.Metadata;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The cases of clients/conformance/fencing.json that concern the wire, and the shipped script's bytes. */
class FencingConformanceTest {
  static JsonObject cases() throws IOException {
    String text = Files.readString(Support.repoRoot().resolve("clients/conformance/fencing.json"), StandardCharsets.UTF_8);
    return JsonParser.parseString(text).getAsJsonObject();
  }

  static String text(JsonObject object, String field) {
    JsonElement value = object.get(field);
    return value == null || value.isJsonNull() ? null : value.getAsString();
  }

  @Test
  void attachWritesTheHeadersAndTheMetadata() throws Exception {
    JsonObject wire = cases().getAsJsonObject("wire");
    assertEquals(FenceWire.GRPC_LOCK, wire.getAsJsonObject("grpcMetadata").get("lock").getAsString());
    assertEquals(FenceWire.GRPC_TOKEN, wire.getAsJsonObject("grpcMetadata").get("token").getAsString());
    assertEquals(FenceWire.HTTP_LOCK, wire.getAsJsonObject("httpHeaders").get("lock").getAsString());
    assertEquals(FenceWire.HTTP_TOKEN, wire.getAsJsonObject("httpHeaders").get("token").getAsString());
    JsonArray attach = cases().getAsJsonArray("attach");
    assertTrue(attach.size() > 0);
    for (JsonElement each : attach) {
      JsonObject c = each.getAsJsonObject();
      Fence fence = new Fence(text(c, "lock"), Long.parseUnsignedLong(text(c, "token")));
      JsonObject want = c.getAsJsonObject("headers");
      Map<String, String> headers = FenceAttach.headers(fence, new HashMap<>());
      assertEquals(text(want, "lock"), headers.get(FenceWire.HTTP_LOCK), c.get("name").getAsString());
      assertEquals(text(want, "token"), headers.get(FenceWire.HTTP_TOKEN), c.get("name").getAsString());
      Metadata metadata = FenceAttach.metadata(fence, new Metadata());
      assertEquals(text(want, "lock"), metadata.get(Metadata.Key.of(FenceWire.GRPC_LOCK, Metadata.ASCII_STRING_MARSHALLER)));
      assertEquals(text(want, "token"), metadata.get(Metadata.Key.of(FenceWire.GRPC_TOKEN, Metadata.ASCII_STRING_MARSHALLER)));
    }
  }

  @Test
  void parseReadsGoodFencesAndNamesTheBadHeader() throws Exception {
    JsonArray parse = cases().getAsJsonArray("parse");
    assertTrue(parse.size() > 0);
    for (JsonElement each : parse) {
      JsonObject c = each.getAsJsonObject();
      String name = c.get("name").getAsString();
      JsonObject headers = c.getAsJsonObject("headers");
      String lock = text(headers, "lock");
      String token = text(headers, "token");
      if (c.has("expect")) {
        Fence fence = FenceWire.parse(lock, token, FenceWire.HTTP_LOCK, FenceWire.HTTP_TOKEN);
        assertEquals(text(c.getAsJsonObject("expect"), "lock"), fence.lock(), name);
        assertEquals(text(c.getAsJsonObject("expect"), "token"), fence.tokenText(), name);
        continue;
      }
      BadFenceException bad = assertThrows(BadFenceException.class,
          () -> FenceWire.parse(lock, token, FenceWire.HTTP_LOCK, FenceWire.HTTP_TOKEN), name);
      assertEquals(c.get("error").getAsString() + "_fence", bad.kind().code(), name);
      assertEquals(c.get("field").getAsString(), bad.field(), name);
      String header = bad.field().equals("lock") ? FenceWire.HTTP_LOCK : FenceWire.HTTP_TOKEN;
      assertEquals(header, bad.header(), name);
      assertTrue(bad.getMessage().contains(header), name + ": " + bad.getMessage());
    }
  }

  @Test
  void refusalMessageIsTheConformanceText() throws Exception {
    String template = cases().getAsJsonObject("refusal").get("message").getAsString();
    Fence fence = new Fence("tenant/a", Long.parseUnsignedLong("18446744073709551614"));
    String want = template.replace("{lock}", "tenant/a").replace("{token}", "18446744073709551614")
        .replace("{newest}", "18446744073709551615");
    assertEquals(want, FenceCheck.refusalMessage(fence, -1L)); // -1L is 2^64-1 unsigned
  }

  @Test
  void shippedScriptIsByteIdentical() throws Exception {
    byte[] conformance = Files.readAllBytes(Support.repoRoot().resolve("clients/conformance/fence-record-1.lua"));
    byte[] shipped;
    try (InputStream in = RedisFenceStore.class.getResourceAsStream("fence-record-1.lua")) {
      shipped = in.readAllBytes();
    }
    assertArrayEquals(conformance, shipped);
    assertEquals(new String(conformance, StandardCharsets.UTF_8), RedisFenceStore.SCRIPT);
  }
}
