package holdfast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * clients/conformance/session-deadline.json against this client's session deadline
 * ({@link SessionAnchors}, which {@link Session} applies to every grant and renewal of its leases).
 */
class SessionConformanceTest {
  /** One pong of a case: when its ping was sent (nanoTime) and when the server received it. */
  static final class Pong {
    final long sentAt;
    final long receivedAfterMs;

    Pong(long sentAt, long receivedAfterMs) {
      this.sentAt = sentAt;
      this.receivedAfterMs = receivedAfterMs;
    }
  }

  /** A session deadline rule, so that a negative control can swap in a wrong one. */
  interface Rule {
    long deadline(long openedAt, List<Pong> pongs, long leaseStartedAfterMs, long ttlMs);
  }

  /** The SDK's rule: what Session does. */
  static final Rule SDK = (openedAt, pongs, leaseStartedAfterMs, ttlMs) -> {
    SessionAnchors anchors = new SessionAnchors(openedAt);
    for (Pong pong : pongs) {
      anchors.pong(pong.sentAt, pong.receivedAfterMs);
    }
    return anchors.deadline(leaseStartedAfterMs, ttlMs);
  };

  static JsonObject table() throws IOException {
    String text = Files.readString(Support.repoRoot().resolve("clients/conformance/session-deadline.json"), StandardCharsets.UTF_8);
    return JsonParser.parseString(text).getAsJsonObject();
  }

  /** One line per case whose deadline differs from the table's. */
  static List<String> mismatches(JsonObject table, Rule rule) {
    double precisionMs = table.get("precisionMs").getAsDouble();
    List<String> found = new ArrayList<>();
    for (JsonElement each : table.getAsJsonArray("cases")) {
      JsonObject c = each.getAsJsonObject();
      List<Pong> pongs = new ArrayList<>();
      for (JsonElement p : c.getAsJsonArray("pongs")) {
        JsonObject pong = p.getAsJsonObject();
        pongs.add(new Pong(LeaseConformanceTest.nanos(pong.get("sentAtMs").getAsDouble()), pong.get("receivedAfterMs").getAsLong()));
      }
      JsonObject renewed = c.getAsJsonObject("renewed");
      long deadline = rule.deadline(LeaseConformanceTest.nanos(c.get("openedAtMs").getAsDouble()), pongs,
          renewed.get("leaseStartedAfterMs").getAsLong(), renewed.get("ttlMs").getAsLong());
      double gotMs = (deadline - LeaseConformanceTest.ORIGIN) / 1e6;
      double wantMs = c.get("deadlineMs").getAsDouble();
      if (Math.abs(gotMs - wantMs) > precisionMs) {
        found.add(c.get("name").getAsString() + ": deadline " + gotMs + ", want " + wantMs);
      }
    }
    return found;
  }

  @Test
  void everyCase() throws Exception {
    JsonObject table = table();
    JsonObject drift = table.getAsJsonObject("drift");
    assertEquals(drift.get("fixedMs").getAsDouble(), LeaseDeadline.DRIFT_FIXED_MS);
    assertEquals(drift.get("rate").getAsDouble(), LeaseDeadline.DRIFT_RATE);
    assertEquals(List.of(), mismatches(table, SDK));
  }

  /** Negative controls: a rule wrong in one way must miss at least one case. */
  @Test
  void wrongRulesMissACase() throws Exception {
    Map<String, Rule> wrong = new LinkedHashMap<>();
    wrong.put("pongs ignored (always from the open)",
        (openedAt, pongs, started, ttl) -> LeaseDeadline.of(openedAt, started, ttl));
    wrong.put("a pong received after the renewal started still counts", (openedAt, pongs, started, ttl) -> {
      long best = LeaseDeadline.of(openedAt, started, ttl);
      for (Pong pong : pongs) {
        best = LeaseDeadline.later(best, LeaseDeadline.of(pong.sentAt, started - pong.receivedAfterMs, ttl));
      }
      return best;
    });
    wrong.put("only the latest pong kept", (openedAt, pongs, started, ttl) ->
        SDK.deadline(openedAt, pongs.isEmpty() ? pongs : pongs.subList(pongs.size() - 1, pongs.size()), started, ttl));
    wrong.put("the latest pong replaces the open", (openedAt, pongs, started, ttl) -> {
      if (pongs.isEmpty()) {
        return LeaseDeadline.of(openedAt, started, ttl);
      }
      Pong last = pongs.get(pongs.size() - 1);
      return LeaseDeadline.of(last.sentAt, started - last.receivedAfterMs, ttl);
    });
    wrong.put("drift counted over the whole session", (openedAt, pongs, started, ttl) -> {
      long best = LeaseDeadline.of(openedAt, started, ttl);
      for (Pong pong : pongs) {
        if (pong.receivedAfterMs <= started) {
          double margin = LeaseDeadline.driftMarginMs(started + ttl);
          best = LeaseDeadline.later(best, pong.sentAt + (long) ((started - pong.receivedAfterMs + ttl - margin) * 1e6));
        }
      }
      return best;
    });
    JsonObject table = table();
    for (Map.Entry<String, Rule> rule : wrong.entrySet()) {
      assertFalse(mismatches(table, rule.getValue()).isEmpty(), "a rule with " + rule.getKey() + " agrees with every case");
    }
  }
}
