"""clients/conformance/signed-fence.json through the kit: key rings (badKeys), the test signer
(sign), parse and verify (verify), the binding to namespace and lock (bind), the lease-end check
(leaseEnd) and the headers' rules (headers) over gRPC metadata, ASGI headers and a WSGI environ.

The file runs through a `Kit`; wrong kits (a verifier that skips the signature, a lock matched by
prefix, a guard that ignores the unsigned headers' disagreement, collectors that keep the first of
two values, a lease-end check without the allowance, a parser that forgives leading zeros, a ring
that trusts the kid) are the negative controls: each must fail the file."""

import json
import unittest

import fence_signing

from holdfast import fencing
from holdfast.fencing import wire

VECTORS = fence_signing.VECTORS
ERRORS = {fencing.UnknownFenceKey: "unknown_key", fencing.BadFenceSignature: "bad_signature",
          fencing.FenceForAnotherNamespace: "wrong_namespace", fencing.FenceForAnotherLock: "wrong_lock",
          fencing.SignedFenceRequired: "signed_required"}


def error_word(refused):
    """The vectors' word for a refusal: malformed, missing, unknown_key, ..."""
    if isinstance(refused, fencing.BadFence):
        return refused.kind
    return ERRORS.get(type(refused), type(refused).__name__)


def grpc_input(headers):
    return [(wire.GRPC_NAMES[field], value) for field, values in headers.items() for value in values]


def asgi_input(headers):
    return [(wire.HTTP_NAMES[field].lower().encode(), value.encode()) for field, values in headers.items() for value in values]


def wsgi_input(headers):  # as a WSGI server passes a header sent twice: one value, joined with commas
    return {"HTTP_" + wire.HTTP_NAMES[field].upper().replace("-", "_"): ",".join(values) for field, values in headers.items()}


class Kit:
    """The implementation the file runs through; the wrong kits below change one part."""

    ring_class = fencing.KeyRing
    guard_class = fencing.FenceGuard
    transports = {"grpc": (grpc_input, wire.collect_grpc, wire.GRPC_NAMES),
                  "asgi": (asgi_input, wire.collect_asgi, wire.HTTP_NAMES),
                  "wsgi": (wsgi_input, wire.collect_wsgi, wire.HTTP_NAMES)}

    def parse(self, text):
        return fencing.parse_signed(text)

    def load_ring(self, jwks_text):
        return self.ring_class.from_jwks(jwks_text)

    def guard(self, **options):
        return self.guard_class(fencing.MemoryStore(), **options)


def run_file(kit):
    """Every vector of signed-fence.json through `kit`; returns the failures (none for a good kit)."""
    failures = []
    ring = kit.load_ring(json.dumps(VECTORS["keys"]["ring"]))

    for case in VECTORS["badKeys"]:
        try:
            kit.load_ring(json.dumps({"keys": [case["jwk"]]}))
            failures.append(f"badKeys {case['name']}: loaded")
        except fencing.BadKeyRing as refused:
            if case["jwk"]["kid"] not in str(refused):
                failures.append(f"badKeys {case['name']}: the error does not name the key: {refused}")

    for case in VECTORS["sign"]:
        lease_end = None if case["leaseEndMs"] is None else int(case["leaseEndMs"])
        signed = fence_signing.sign_fence(case["seed"], case["lock"], int(case["token"]), lease_end, case["namespace"])
        if signed != case["fence"]:
            failures.append(f"sign {case['name']}: {signed}")

    for case in VECTORS["verify"]:
        try:
            fence = kit.parse(case["fence"])
            ring.verify(fence)
            got = {"keyId": fence.key_id, "namespace": fence.namespace, "lock": fence.lock, "token": str(fence.token),
                   "leaseEndMs": None if fence.lease_end_ms is None else str(fence.lease_end_ms)}
        except fencing.FenceRefused as refused:
            got = error_word(refused)
        if got != case.get("expect", case.get("error")):
            failures.append(f"verify {case['name']}: {got}")

    for case in VECTORS["bind"]:
        guard = kit.guard(keys=ring, namespace=case["namespace"], lock=case["lock"])
        try:
            guard.screen({"fence": [case["fence"]]}, wire.HTTP_NAMES, guard.resource_lock(None))
            got = None
        except fencing.FenceRefused as refused:
            got = error_word(refused)
        if got != case["error"]:
            failures.append(f"bind {case['name']}: {got}")

    for case in VECTORS["leaseEnd"]:
        guard = kit.guard(keys=ring, namespace=kit.parse(case["fence"]).namespace, lock=kit.parse(case["fence"]).lock,
                          lease_end_skew_ms=int(case["skewMs"]))
        try:
            guard.screen({"fence": [case["fence"]]}, wire.HTTP_NAMES, guard.resource_lock(None), int(case["nowMs"]))
            admitted = True
        except fencing.FenceLeaseEnded as ended:
            admitted = False
            if ended.http_body()["skew_ms"] != case["skewMs"] or ended.http_body()["now_ms"] != case["nowMs"]:
                failures.append(f"leaseEnd {case['name']}: body {ended.http_body()}")
        if admitted != case["admitted"]:
            failures.append(f"leaseEnd {case['name']}: admitted {admitted}")

    for case in VECTORS["headers"]:
        guard = kit.guard(keys=ring, lock="orders", accept_unsigned=case["acceptUnsigned"])
        for transport, (make, collect, names) in kit.transports.items():
            try:
                fence, _ = guard.read(collect(make(case["headers"])), names)
                got = "signed" if fence.signed else "unsigned"
            except fencing.FenceRefused as refused:
                got = error_word(refused)
            if got != case.get("expect", case.get("error")):
                failures.append(f"headers {case['name']} ({transport}): {got}")
    return failures


class SkipsSignature(Kit):
    class ring_class(fencing.KeyRing):
        def verify(self, fence):
            if fence.key_id not in self.key_ids:
                raise fencing.UnknownFenceKey(fence.key_id)


class MatchesLockByPrefix(Kit):
    class guard_class(fencing.FenceGuard):
        def screen(self, raw, names, resource_lock, now_ms=None):
            fence = super().screen(raw, names, None, now_ms)
            if resource_lock is not None and not (fence.lock.startswith(resource_lock) or resource_lock.startswith(fence.lock)):
                raise fencing.FenceForAnotherLock(fence.lock, resource_lock)
            return fence


class IgnoresDisagreement(Kit):
    class guard_class(fencing.FenceGuard):
        def read(self, raw, names):
            return super().read({"fence": raw["fence"]} if raw["fence"] else raw, names)


class KeepsTheFirstValue(Kit):
    transports = {name: (make, lambda value, collect=collect: {field: values[:1] for field, values in collect(value).items()},
                         names) for name, (make, collect, names) in Kit.transports.items()}


class NoSkewAllowance(Kit):
    class guard_class(fencing.FenceGuard):
        def screen(self, raw, names, resource_lock, now_ms=None):
            self.lease_end_skew_ms = 0 if self.lease_end_skew_ms is not None else None
            return super().screen(raw, names, resource_lock, now_ms)


class ForgivesLeadingZeros(Kit):
    def parse(self, text):
        fields = text.split(":")
        if len(fields) == 7 and fields[4].isdigit():
            fields[4] = fields[4].lstrip("0") or "0"
        return fencing.parse_signed(":".join(fields))


class TrustsTheKid(Kit):
    def load_ring(self, jwks_text):
        document = json.loads(jwks_text)
        for jwk in document["keys"]:
            if isinstance(jwk.get("x"), str):
                try:
                    jwk["kid"] = fencing.key_id(fencing.signed._b64url(jwk["x"]) or b"")
                except TypeError:
                    pass
        return fencing.KeyRing.from_jwks(json.dumps(document))


class SignedFenceConformanceTest(unittest.TestCase):
    def test_the_kit_passes_every_vector(self):
        self.assertEqual(run_file(Kit()), [])

    def test_negative_controls_wrong_kits_fail_the_file(self):
        wrong = {SkipsSignature: "verify forged token (altered after signing): {'keyId'",
                 MatchesLockByPrefix: "bind a lock whose name only starts the same: None",
                 IgnoresDisagreement: "headers unsigned token disagrees (grpc): signed",
                 KeepsTheFirstValue: "headers signed fence twice (grpc): signed",
                 NoSkewAllowance: "leaseEnd at the end plus the skew: admitted False",
                 ForgivesLeadingZeros: "verify token with a leading zero: bad_signature",
                 TrustsTheKid: "badKeys kid does not match x: loaded"}
        for kit, failure in wrong.items():
            with self.subTest(kit.__name__):
                failures = run_file(kit())
                self.assertTrue(any(each.startswith(failure) for each in failures), failures)

    def test_wire_names_are_the_files(self):
        self.assertEqual(VECTORS["wire"], {"http": wire.HTTP_NAMES, "grpc": wire.GRPC_NAMES})

    def test_a_duplicate_signed_fence_is_refused_in_each_transport_naming_it(self):
        fence = VECTORS["sign"][0]["fence"]
        guard = fencing.FenceGuard(fencing.MemoryStore(), keys=fence_signing.ring(fence_signing.RING_SEED), lock="orders")
        # Twice, or once with the two joined by a comma (as a WSGI server, a proxy or grpc-js pass it on).
        for transport, (make, collect, names) in Kit.transports.items():
            for values in ([fence, fence], [f"{fence},{fence}"]):
                with self.subTest(transport, joined=len(values) == 1), self.assertRaises(fencing.BadFence) as raised:
                    guard.read(collect(make({"fence": values})), names)
                self.assertEqual(raised.exception.http_body(), {
                    "error": "malformed_fence", "field": "fence", "header": names["fence"],
                    "message": f"malformed fence: {names['fence']} must be sent once"})


if __name__ == "__main__":
    unittest.main()
