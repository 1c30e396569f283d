"""clients/conformance/deadlock.json against the Python client's one rule (holdfast.errors.is_deadlock)
and the error translate() makes of each case's status: DeadlockError exactly when the table says so."""

import json
import unittest

import support

import grpc
import holdfast
from holdfast.errors import DEADLOCK_PREFIX, DEADLOCK_REASON, is_deadlock, translate

TABLE = json.loads((support.REPO_ROOT / "clients" / "conformance" / "deadlock.json").read_text(encoding="utf-8"))
CODES = {code.value[0]: code for code in grpc.StatusCode}


class CaseError(grpc.RpcError):
    """A failed call as grpc raises it: code(), details() and trailing_metadata() as (key, value) pairs."""

    def __init__(self, case):
        super().__init__(case["message"])
        self._case = case

    def code(self):
        return CODES[self._case["code"]]

    def details(self):
        return self._case["message"]

    def trailing_metadata(self):
        return tuple(self._case["metadata"].items())


def mismatches(rule=is_deadlock):
    """One line per case where `rule(code, metadata, message)` differs from the table."""
    found = []
    for case in TABLE["cases"]:
        got = rule(CODES[case["code"]], tuple(case["metadata"].items()), case["message"])
        if got != case["deadlock"]:
            found.append(f"{case['name']}: {got}, want {case['deadlock']}")
    return found


class DeadlockConformanceTest(unittest.TestCase):
    def test_every_case(self):
        self.assertEqual(mismatches(), [])

    def test_translate_raises_deadlock_error_exactly_when_the_table_says(self):
        for case in TABLE["cases"]:
            with self.subTest(case["name"]):
                error = translate(CaseError(case), "127.0.0.1:1", "account-a")
                self.assertIsInstance(error, holdfast.HoldfastError)
                self.assertEqual(isinstance(error, holdfast.DeadlockError), case["deadlock"])
                self.assertEqual(error.code(), CODES[case["code"]])
                self.assertEqual(error.details(), case["message"])  # the server's words, unchanged
                if case["deadlock"]:
                    self.assertEqual(error.lock_name, "account-a")
                    self.assertIn('lock "account-a"', str(error))
                    self.assertIn("127.0.0.1:1", str(error))

    def test_wrong_rules_miss_a_case(self):
        """Negative controls: a rule wrong in one way must miss at least one case."""
        aborted = grpc.StatusCode.ABORTED
        wrong = {
            "any ABORTED": lambda code, metadata, message: code == aborted,
            "metadata only": lambda code, metadata, message: code == aborted and DEADLOCK_REASON in metadata,
            "prefix anywhere in the message": lambda code, metadata, message: code == aborted and (
                DEADLOCK_REASON in metadata or DEADLOCK_PREFIX in message),
            "the reason's value case-folded": lambda code, metadata, message: code == aborted and (
                any((key, value.lower()) == DEADLOCK_REASON for key, value in metadata)
                or message.startswith(DEADLOCK_PREFIX)),
            "any code": lambda code, metadata, message: (
                DEADLOCK_REASON in metadata or message.startswith(DEADLOCK_PREFIX)),
        }
        for what, rule in wrong.items():
            with self.subTest(what):
                self.assertGreater(len(mismatches(rule)), 0)


if __name__ == "__main__":
    unittest.main()
