package holdfast

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/holdfast/holdfast/clients/go/internal/testrepo"
)

// clients/conformance/lease-deadline.json against this client's lease deadline (deadline.go, which
// Lease applies to every acquired and renewed event).

type leaseTable struct {
	PrecisionMs float64 `json:"precisionMs"`
	Drift       struct {
		FixedMs float64 `json:"fixedMs"`
		Rate    float64 `json:"rate"`
	} `json:"drift"`
	DriftMargin []struct {
		CountedMs float64 `json:"countedMs"`
		MarginMs  float64 `json:"marginMs"`
	} `json:"driftMargin"`
	Cases []struct {
		Name     string  `json:"name"`
		SentAtMs float64 `json:"sentAtMs"`
		Steps    []struct {
			AtMs                float64  `json:"atMs"`
			Event               string   `json:"event"`
			LeaseStartedAfterMs int64    `json:"leaseStartedAfterMs"`
			TTLMs               int64    `json:"ttlMs"`
			Expect              string   `json:"expect"`
			DeadlineMs          *float64 `json:"deadlineMs"`
		} `json:"steps"`
	} `json:"cases"`
}

func loadLeaseTable(t *testing.T) leaseTable {
	raw, err := os.ReadFile(filepath.Join(testrepo.Root(t), "clients", "conformance", "lease-deadline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table leaseTable
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	return table
}

// deadlineRule is the lease rule in parts, so that a negative control can swap one out.
type deadlineRule struct {
	leaseDeadline  func(sentAt time.Time, leaseStartedAfter, ttl time.Duration) time.Time
	laterDeadline  func(kept, confirmed time.Time) time.Time
	deadlinePassed func(deadline, now time.Time) bool
}

var sdkRule = deadlineRule{LeaseDeadline, laterDeadline, deadlinePassed}

// The table's ms as times after an arbitrary origin (nanoseconds, as time.Time counts).
var tableOrigin = time.Unix(1_000_000, 0)

func tableTime(ms float64) time.Time {
	return tableOrigin.Add(time.Duration(math.Round(ms * 1e6)))
}

// leaseMismatches plays every case as Lease does; one line per step whose outcome differs.
func leaseMismatches(table leaseTable, rule deadlineRule) []string {
	var found []string
	for _, c := range table.Cases {
		var kept time.Time // no deadline before the grant
		lost := false
		for i, step := range c.Steps {
			if !lost {
				if step.Event != "look" {
					confirmed := rule.leaseDeadline(tableTime(c.SentAtMs),
						time.Duration(step.LeaseStartedAfterMs)*time.Millisecond, time.Duration(step.TTLMs)*time.Millisecond)
					kept = rule.laterDeadline(kept, confirmed)
				}
				lost = rule.deadlinePassed(kept, tableTime(step.AtMs))
			}
			got := "held"
			if lost {
				got = "lost"
			}
			keptMs := float64(kept.Sub(tableOrigin)) / 1e6
			if got != step.Expect || (!lost && (step.DeadlineMs == nil || math.Abs(keptMs-*step.DeadlineMs) > table.PrecisionMs)) {
				want := step.Expect
				if step.DeadlineMs != nil {
					want += fmt.Sprintf(" %v", *step.DeadlineMs)
				}
				found = append(found, fmt.Sprintf("%s, step %d: %s (deadline %v), want %s", c.Name, i+1, got, keptMs, want))
			}
		}
	}
	return found
}

func TestLeaseConformanceDriftAllowance(t *testing.T) {
	table := loadLeaseTable(t)
	if float64(DriftFixed)/float64(time.Millisecond) != table.Drift.FixedMs || DriftRate != table.Drift.Rate {
		t.Fatalf("drift %v + %v, want %+v", DriftFixed, DriftRate, table.Drift)
	}
	for _, row := range table.DriftMargin {
		got := float64(DriftMargin(time.Duration(row.CountedMs*1e6))) / 1e6
		if math.Abs(got-row.MarginMs) > table.PrecisionMs {
			t.Errorf("DriftMargin(%v ms) = %v ms, want %v", row.CountedMs, got, row.MarginMs)
		}
	}
}

func TestLeaseConformanceCases(t *testing.T) {
	for _, line := range leaseMismatches(loadLeaseTable(t), sdkRule) {
		t.Error(line)
	}
}

// Negative controls: a rule wrong in one way must miss at least one case.
func TestLeaseConformanceWrongRulesMissACase(t *testing.T) {
	table := loadLeaseTable(t)
	noDrift, fixedOnly, latestWins, heldAtDeadline := sdkRule, sdkRule, sdkRule, sdkRule
	noDrift.leaseDeadline = func(sentAt time.Time, after, ttl time.Duration) time.Time { return sentAt.Add(after + ttl) }
	fixedOnly.leaseDeadline = func(sentAt time.Time, after, ttl time.Duration) time.Time {
		return sentAt.Add(after + ttl - DriftFixed)
	}
	latestWins.laterDeadline = func(_, confirmed time.Time) time.Time { return confirmed }
	heldAtDeadline.deadlinePassed = func(deadline, now time.Time) bool { return now.After(deadline) }
	for what, rule := range map[string]deadlineRule{
		"no drift allowance":                                     noDrift,
		"only the fixed 5 ms allowance":                          fixedOnly,
		"the latest confirmation wins, even an earlier deadline": latestWins,
		"a lease still held at its deadline":                     heldAtDeadline,
	} {
		if len(leaseMismatches(table, rule)) == 0 {
			t.Errorf("a rule with %s agrees with every case", what)
		}
	}
}
