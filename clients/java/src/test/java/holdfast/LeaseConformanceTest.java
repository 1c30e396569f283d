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
 * clients/conformance/lease-deadline.json against this client's lease deadline ({@link LeaseDeadline},
 * which {@link Lease} applies to every acquired and renewed event).
 */
class LeaseConformanceTest {
  /**
   * The table's ms 0 as a {@link System#nanoTime()} value near overflow: the 55.5 h case's
   * deadline wraps past Long.MAX_VALUE while its arrival does not, as nanoTime values may.
   */
  static final long ORIGIN = Long.MAX_VALUE - 199_995_000_000_000L;

  /** The lease rule in parts, so that a negative control can swap one out. */
  static class Rule {
    long deadline(long sentAtNanos, long leaseStartedAfterMs, long ttlMs) {
      return LeaseDeadline.of(sentAtNanos, leaseStartedAfterMs, ttlMs);
    }

    long later(long kept, long confirmed) {
      return LeaseDeadline.later(kept, confirmed);
    }

    boolean passed(long deadline, long now) {
      return LeaseDeadline.passed(deadline, now);
    }
  }

  static JsonObject table() throws IOException {
    String text = Files.readString(Support.repoRoot().resolve("clients/conformance/lease-deadline.json"), StandardCharsets.UTF_8);
    return JsonParser.parseString(text).getAsJsonObject();
  }

  static long nanos(double ms) {
    return ORIGIN + Math.round(ms * 1e6);
  }

  /** Plays every case as Lease does; one line per step whose outcome differs from the table. */
  static List<String> mismatches(JsonObject table, Rule rule) {
    double precisionMs = table.get("precisionMs").getAsDouble();
    List<String> found = new ArrayList<>();
    for (JsonElement each : table.getAsJsonArray("cases")) {
      JsonObject c = each.getAsJsonObject();
      long sentAt = nanos(c.get("sentAtMs").getAsDouble());
      boolean hasDeadline = false; // no deadline before the grant
      boolean lost = false;
      long kept = 0;
      int number = 0;
      for (JsonElement stepElement : c.getAsJsonArray("steps")) {
        JsonObject step = stepElement.getAsJsonObject();
        number++;
        if (!lost) {
          if (!step.get("event").getAsString().equals("look")) {
            long confirmed = rule.deadline(sentAt, step.get("leaseStartedAfterMs").getAsLong(), step.get("ttlMs").getAsLong());
            kept = hasDeadline ? rule.later(kept, confirmed) : confirmed;
            hasDeadline = true;
          }
          lost = rule.passed(kept, nanos(step.get("atMs").getAsDouble()));
        }
        String got = lost ? "lost" : "held";
        double keptMs = (kept - ORIGIN) / 1e6;
        JsonElement want = step.get("deadlineMs");
        if (!got.equals(step.get("expect").getAsString())
            || (!lost && (want == null || Math.abs(keptMs - want.getAsDouble()) > precisionMs))) {
          found.add(c.get("name").getAsString() + ", step " + number + ": " + got + " (deadline " + keptMs + "), want "
              + step.get("expect").getAsString() + (want == null ? "" : " " + want.getAsDouble()));
        }
      }
    }
    return found;
  }

  @Test
  void driftAllowance() throws Exception {
    JsonObject table = table();
    JsonObject drift = table.getAsJsonObject("drift");
    assertEquals(drift.get("fixedMs").getAsDouble(), LeaseDeadline.DRIFT_FIXED_MS);
    assertEquals(drift.get("rate").getAsDouble(), LeaseDeadline.DRIFT_RATE);
    double precisionMs = table.get("precisionMs").getAsDouble();
    for (JsonElement each : table.getAsJsonArray("driftMargin")) {
      JsonObject row = each.getAsJsonObject();
      double counted = row.get("countedMs").getAsDouble();
      assertEquals(row.get("marginMs").getAsDouble(), LeaseDeadline.driftMarginMs(counted), precisionMs, "counted " + counted);
    }
  }

  @Test
  void everyCase() throws Exception {
    assertEquals(List.of(), mismatches(table(), new Rule()));
  }

  /** Negative controls: a rule wrong in one way must miss at least one case. */
  @Test
  void wrongRulesMissACase() throws Exception {
    Map<String, Rule> wrong = new LinkedHashMap<>();
    wrong.put("no drift allowance", new Rule() {
      @Override
      long deadline(long sentAtNanos, long leaseStartedAfterMs, long ttlMs) {
        return sentAtNanos + (leaseStartedAfterMs + ttlMs) * 1_000_000L;
      }
    });
    wrong.put("only the fixed 5 ms allowance", new Rule() {
      @Override
      long deadline(long sentAtNanos, long leaseStartedAfterMs, long ttlMs) {
        return sentAtNanos + (leaseStartedAfterMs + ttlMs - 5) * 1_000_000L;
      }
    });
    wrong.put("the latest confirmation wins, even an earlier deadline", new Rule() {
      @Override
      long later(long kept, long confirmed) {
        return confirmed;
      }
    });
    wrong.put("a lease still held at its deadline", new Rule() {
      @Override
      boolean passed(long deadline, long now) {
        return now - deadline > 0;
      }
    });
    wrong.put("nanoTime values compared by value, not by difference", new Rule() {
      @Override
      long later(long kept, long confirmed) {
        return Math.max(kept, confirmed);
      }

      @Override
      boolean passed(long deadline, long now) {
        return now >= deadline;
      }
    });
    JsonObject table = table();
    for (Map.Entry<String, Rule> rule : wrong.entrySet()) {
      assertFalse(mismatches(table, rule.getValue()).isEmpty(), "a rule with " + rule.getKey() + " agrees with every case");
    }
  }
}
