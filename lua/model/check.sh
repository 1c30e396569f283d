#!/usr/bin/env bash
# Model-checks the wait queue (lua/model/queue.pml) with spin; docs/waiting.md, "Checked by models".
# The model must pass every check, and each deliberately broken variant must fail the check it
# breaks (negative controls: proof that the checks can fail). An incomplete search (depth, memory
# or time ran out) fails too. Runs from `npm test`; needs Debian's `spin` and a C compiler.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
command -v spin >/dev/null || { echo "lua/model/check.sh: spin is not installed (apt-get install -y spin)" >&2; exit 1; }

DEPTH=${PAN_DEPTH:-400000}   # pan -m: max search depth (the model reaches < 100)
MEMORY_MB=2048   # pan's memory limit (the model with aborts needs about 1 GB)
SECONDS_EACH=300 # per run

# run NAME DEFINES CHECK: builds pan for the model with DEFINES and runs CHECK (safety: assertions
# and end states; otherwise the named LTL property alone, assertions ignored, under weak fairness).
# Prints pass, fail or incomplete.
run() {
  local name="$1" defines="$2" check="$3" dir="$work/$1-$3" out
  mkdir -p "$dir"
  cp "$here/queue.pml" "$dir/"
  (cd "$dir" && spin -a $defines queue.pml >/dev/null)
  if [ "$check" = safety ]; then
    cc -w -O2 -DNOCLAIM -DSAFETY -DMEMLIM=$MEMORY_MB -o "$dir/pan" "$dir/pan.c"
    (cd "$dir" && timeout "$SECONDS_EACH" ./pan -m$DEPTH >out.txt 2>&1) || true
  else
    cc -w -O2 -DNFAIR=3 -DMEMLIM=$MEMORY_MB -o "$dir/pan" "$dir/pan.c"
    (cd "$dir" && timeout "$SECONDS_EACH" ./pan -a -f -A -N "$check" -m$DEPTH >out.txt 2>&1) || true
  fi
  out="$dir/out.txt"
  local states errors
  states="$(grep -oE '^ *[0-9.e+]+ states, stored' "$out" | grep -oE '[0-9.e+]+' | head -1 || true)"
  errors="$(grep -oE 'errors: [0-9]+' "$out" | grep -oE '[0-9]+' | head -1 || true)"
  if [ -z "$errors" ] || { [ "$errors" = 0 ] && grep -qE 'max search depth too small|out of memory' "$out"; }; then
    echo "incomplete"
    sed -n '1,20p' "$out" >&2
  elif [ "$errors" = 0 ]; then
    echo "pass ($states states, $(grep -oE '[0-9.]+ seconds' "$out" | tail -1 || echo '? seconds'))"
  else
    echo "fail: $(grep -m1 -E 'assertion violated|acceptance cycle|invalid end state' "$out" | sed 's/^pan:1: //')"
  fi
}

failures=0
# expect WANT NAME DEFINES CHECK [WHY]: a failure must also name WHY (the assertion that broke),
# so that a negative control fails for its own reason, not another one.
expect() {
  local want="$1" name="$2" defines="$3" check="$4" why="${5:-}" got
  got="$(run "$name" "$defines" "$check")"
  if { [ "${got%% *}" = "$want" ] || [ "${got%%:*}" = "$want" ]; } && [[ "$got" == *"$why"* ]]; then
    echo "ok    $name $check: $got"
  else
    echo "WRONG $name $check: expected $want, got $got"
    failures=$((failures + 1))
  fi
}

# How spin prints the assertions these controls must break (SETTLED and the aborted answer's).
SETTLED='!(entryOver[0])'
LEAVES_NOTHING='&&(wrec[i]=='
started=$SECONDS
expect pass model "" safety
expect pass model "" no_lost_wakeup
expect pass model "" no_orphan_grant
# Negative controls: each broken step must be caught.
expect fail serves-without-fit -DBROKEN_NO_FIT safety
expect fail lease-ends-before-deadline -DBROKEN_EXPIRY_BEFORE_DEADLINE safety
expect fail timer-claim-does-not-settle -DBROKEN_CLAIM_NO_SETTLE no_lost_wakeup
expect fail served-grant-without-claim-lease -DBROKEN_NO_CLAIM_LEASE no_orphan_grant
expect fail hand-off-told-on-a-claim-lease -DBROKEN_HANDOFF_CLAIM_LEASE safety
# Deadlock aborts (abort-wait-4 and claim-4's {-7, message}); the model above runs with them.
expect fail release-does-not-serve -DBROKEN_RELEASE_NO_SERVE safety "$SETTLED"
expect fail abort-does-not-serve -DBROKEN_ABORT_NO_SETTLE safety "$SETTLED"
expect fail abort-of-a-served-waiter -DBROKEN_ABORT_SERVED safety "$LEAVES_NOTHING"
expect fail abort-of-a-served-waiter -DBROKEN_ABORT_SERVED no_orphan_grant "acceptance cycle"
expect fail abort-never-answered -DBROKEN_ABORT_UNANSWERED no_lost_wakeup "acceptance cycle"
checks=13
echo "spin ran $checks checks in $((SECONDS - started)) s"
echo "spin: $((checks - failures)) passed, $failures failed"
[ "$failures" = 0 ]
