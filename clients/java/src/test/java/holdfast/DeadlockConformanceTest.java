package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * clients/conformance/deadlock.json against {@link DeadlockException#classify}, the one rule every call
 * that waits (acquire, hold, a session's acquire and hold) applies to its failure.
 */
class DeadlockConformanceTest {
  /** A deadlock rule, so that a negative control can swap in a wrong one. */
  interface Rule {
    boolean isDeadlock(Status status, Metadata trailers);
  }

  /** The SDK's rule: what every call's failure goes through. */
  static final Rule SDK = (status, trailers) -> DeadlockException.classify(status, trailers, "a") instanceof DeadlockException;

  static List<JsonObject> cases() throws IOException {
    String text = Files.readString(Support.repoRoot().resolve("clients/conformance/deadlock.json"), StandardCharsets.UTF_8);
    List<JsonObject> cases = new ArrayList<>();
    for (JsonElement each : JsonParser.parseString(text).getAsJsonObject().getAsJsonArray("cases")) {
      cases.add(each.getAsJsonObject());
    }
    return cases;
  }

  static Status status(JsonObject c) {
    return Status.fromCodeValue(c.get("code").getAsInt()).withDescription(c.get("message").getAsString());
  }

  static Metadata trailers(JsonObject c) {
    Metadata trailers = new Metadata();
    for (Map.Entry<String, JsonElement> entry : c.getAsJsonObject("metadata").entrySet()) {
      trailers.put(Metadata.Key.of(entry.getKey(), Metadata.ASCII_STRING_MARSHALLER), entry.getValue().getAsString());
    }
    return trailers;
  }

  /** One line per case the rule decides otherwise than the table. */
  static List<String> mismatches(List<JsonObject> cases, Rule rule) {
    List<String> found = new ArrayList<>();
    for (JsonObject c : cases) {
      boolean want = c.get("deadlock").getAsBoolean();
      if (rule.isDeadlock(status(c), trailers(c)) != want) {
        found.add(c.get("name").getAsString() + ": deadlock should be " + want);
      }
    }
    return found;
  }

  @Test
  void everyCase() throws Exception {
    assertEquals(List.of(), mismatches(cases(), SDK));
  }

  /** A deadlock keeps the server's message unchanged and the lock's name; anything else stays the status it was. */
  @Test
  void theErrorCarriesTheMessageAndTheLock() throws Exception {
    for (JsonObject c : cases()) {
      StatusRuntimeException error = DeadlockException.classify(status(c), trailers(c), "account-a");
      assertEquals(Status.Code.values()[c.get("code").getAsInt()], error.getStatus().getCode(), c.get("name").getAsString());
      assertEquals(c.get("message").getAsString(), error.getStatus().getDescription());
      if (c.get("deadlock").getAsBoolean()) {
        DeadlockException deadlock = assertInstanceOf(DeadlockException.class, error);
        assertEquals(c.get("message").getAsString(), deadlock.getMessage());
        assertEquals("account-a", deadlock.lockName());
      } else {
        assertFalse(error instanceof DeadlockException, c.get("name").getAsString());
      }
    }
    // A session operation's error (no metadata) goes through the same rule.
    StatusRuntimeException session = SessionErrors.of(holdfast.v1.Lock.OpError.newBuilder().setCode(10)
        .setMessage("deadlock: owner \"session:a\" waits for lock \"b\"").build(), "b");
    assertTrue(session instanceof DeadlockException);
    assertFalse(SessionErrors.of(holdfast.v1.Lock.OpError.newBuilder().setCode(10)
        .setMessage("lock \"b\" was lost").build(), "b") instanceof DeadlockException);
  }

  /** Negative controls: a rule wrong in one way must miss at least one case. */
  @Test
  void wrongRulesMissACase() throws Exception {
    Map<String, Rule> wrong = new LinkedHashMap<>();
    wrong.put("any ABORTED", (status, trailers) -> status.getCode() == Status.Code.ABORTED);
    wrong.put("metadata only", (status, trailers) ->
        status.getCode() == Status.Code.ABORTED && "deadlock".equals(trailers.get(DeadlockException.REASON)));
    wrong.put("prefix anywhere in the message", (status, trailers) -> status.getCode() == Status.Code.ABORTED
        && ("deadlock".equals(trailers.get(DeadlockException.REASON)) || status.getDescription().contains("deadlock: ")));
    wrong.put("the reason case-folded", (status, trailers) -> status.getCode() == Status.Code.ABORTED
        && ("deadlock".equalsIgnoreCase(trailers.get(DeadlockException.REASON)) || status.getDescription().startsWith("deadlock: ")));
    wrong.put("any code", (status, trailers) ->
        "deadlock".equals(trailers.get(DeadlockException.REASON)) || status.getDescription().startsWith("deadlock: "));
    List<JsonObject> cases = cases();
    for (Map.Entry<String, Rule> rule : wrong.entrySet()) {
      assertFalse(mismatches(cases, rule.getValue()).isEmpty(), "a rule with " + rule.getKey() + " agrees with every case");
    }
  }
}
