"""clients/conformance/session-deadline.json against the Python client's session lease deadline
(holdfast.session_deadline, which a Session applies to every hold answer and `renewed` message)."""

import json
import unittest

import support

from holdfast import lease, session_deadline

TABLE = json.loads((support.REPO_ROOT / "clients" / "conformance" / "session-deadline.json").read_text(encoding="utf-8"))


def sdk_rule(anchors, after, ttl):
    return session_deadline.anchored_deadline(anchors, after, ttl)


def mismatches(rule=sdk_rule, kept=session_deadline.KEPT_PONGS):
    """Plays every case through Anchors (time.monotonic() seconds); one line per case that differs."""
    found = []
    for case in TABLE["cases"]:
        anchors = session_deadline.Anchors(case["openedAtMs"] / 1000.0, kept)
        for pong in case["pongs"]:
            anchors.add_pong(pong["sentAtMs"] / 1000.0, pong["receivedAfterMs"])
        renewed = case["renewed"]
        got_ms = rule(anchors.all(), renewed["leaseStartedAfterMs"], renewed["ttlMs"]) * 1000.0
        if abs(got_ms - case["deadlineMs"]) > TABLE["precisionMs"]:
            found.append(f"{case['name']}: {got_ms:.3f} ms, want {case['deadlineMs']}")
    return found


def latest_anchor_only(anchors, after, ttl):
    """Counts from the latest usable anchor instead of keeping the latest deadline."""
    usable = [anchor for anchor in anchors if anchor[1] <= after]
    return session_deadline.anchored_deadline(usable[-1:], after, ttl)


class SessionDeadlineConformanceTest(unittest.TestCase):
    def test_drift_allowance_is_the_tables(self):
        self.assertEqual(lease.CLOCK_DRIFT, (TABLE["drift"]["fixedMs"], TABLE["drift"]["rate"]))

    def test_every_case(self):
        self.assertEqual(mismatches(), [])

    def test_wrong_rules_miss_a_case(self):
        """Negative controls: a rule wrong in one way must miss at least one case."""
        wrong = {
            "a pong received after the renewal started still counts": lambda anchors, after, ttl: max(
                lease.lease_deadline(sent, after - received, ttl) for sent, received in anchors),
            "pongs ignored": lambda anchors, after, ttl: sdk_rule(anchors[:1], after, ttl),
            "the open ignored once a usable pong came": lambda anchors, after, ttl: sdk_rule(
                [pong for pong in anchors[1:] if pong[1] <= after] or anchors, after, ttl),
            "the latest usable anchor, not the latest deadline": latest_anchor_only,
            "no drift allowance": lambda anchors, after, ttl: max(
                sent + (after - received + ttl) / 1000.0 for sent, received in anchors if received <= after),
        }
        for what, rule in wrong.items():
            with self.subTest(what):
                self.assertGreater(len(mismatches(rule)), 0)
        with self.subTest("only the latest pong kept"):
            self.assertGreater(len(mismatches(kept=1)), 0)


if __name__ == "__main__":
    unittest.main()
