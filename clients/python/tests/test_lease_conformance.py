"""clients/conformance/lease-deadline.json against the Python client's lease deadline
(holdfast.lease, which LeaseState applies to every acquired and renewed event)."""

import json
import types
import unittest

import support

from holdfast import lease

TABLE = json.loads((support.REPO_ROOT / "clients" / "conformance" / "lease-deadline.json").read_text(encoding="utf-8"))

SDK = types.SimpleNamespace(lease_deadline=lease.lease_deadline, later_deadline=lease.later_deadline,
                            deadline_passed=lease.deadline_passed)


def mismatches(rule):
    """Plays every case as LeaseState does (time.monotonic() seconds); one line per step that differs."""
    found = []
    for case in TABLE["cases"]:
        sent_at = case["sentAtMs"] / 1000.0
        kept, lost = None, False  # no deadline before the grant
        for number, step in enumerate(case["steps"], 1):
            if not lost:
                if step["event"] != "look":
                    confirmed = rule.lease_deadline(sent_at, step["leaseStartedAfterMs"], step["ttlMs"])
                    kept = rule.later_deadline(kept, confirmed)
                lost = rule.deadline_passed(kept, step["atMs"] / 1000.0)
            got = "lost" if lost else "held"
            if got != step["expect"] or (not lost and abs(kept * 1000.0 - step["deadlineMs"]) > TABLE["precisionMs"]):
                found.append(f"{case['name']}, step {number}: {got} (deadline {kept} s), "
                             f"want {step['expect']} {step.get('deadlineMs', '')}")
    return found


def changed(**parts):
    """The SDK's rule with some parts replaced."""
    return types.SimpleNamespace(**{**vars(SDK), **parts})


class LeaseDeadlineConformanceTest(unittest.TestCase):
    def test_drift_allowance(self):
        self.assertEqual(lease.CLOCK_DRIFT, (TABLE["drift"]["fixedMs"], TABLE["drift"]["rate"]))
        for row in TABLE["driftMargin"]:
            with self.subTest(counted_ms=row["countedMs"]):
                self.assertAlmostEqual(lease.drift_margin_ms(row["countedMs"]), row["marginMs"],
                                       delta=TABLE["precisionMs"])

    def test_every_case(self):
        self.assertEqual(mismatches(SDK), [])

    def test_wrong_rules_miss_a_case(self):
        """Negative controls: a rule wrong in one way must miss at least one case."""
        wrong = {
            "no drift allowance": changed(lease_deadline=lambda sent_at, after, ttl: sent_at + (after + ttl) / 1000.0),
            "only the fixed 5 ms allowance":
                changed(lease_deadline=lambda sent_at, after, ttl: sent_at + (after + ttl - 5) / 1000.0),
            "the latest confirmation wins, even an earlier deadline": changed(later_deadline=lambda kept, new: new),
            "a lease still held at its deadline": changed(deadline_passed=lambda deadline, now: now > deadline),
        }
        for what, rule in wrong.items():
            with self.subTest(what):
                self.assertGreater(len(mismatches(rule)), 0)


if __name__ == "__main__":
    unittest.main()
