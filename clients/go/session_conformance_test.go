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

// clients/conformance/session-deadline.json against this client's session deadline
// (session_deadline.go, which Session applies to every hold answer and renewed message).

type sessionTable struct {
	PrecisionMs float64 `json:"precisionMs"`
	Cases       []struct {
		Name       string  `json:"name"`
		OpenedAtMs float64 `json:"openedAtMs"`
		Pongs      []struct {
			SentAtMs        float64 `json:"sentAtMs"`
			ReceivedAfterMs int64   `json:"receivedAfterMs"`
		} `json:"pongs"`
		Renewed struct {
			LeaseStartedAfterMs int64 `json:"leaseStartedAfterMs"`
			TTLMs               int64 `json:"ttlMs"`
		} `json:"renewed"`
		DeadlineMs float64 `json:"deadlineMs"`
	} `json:"cases"`
}

func loadSessionTable(t *testing.T) sessionTable {
	raw, err := os.ReadFile(filepath.Join(testrepo.Root(t), "clients", "conformance", "session-deadline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table sessionTable
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Cases) == 0 {
		t.Fatal("session-deadline.json has no cases")
	}
	return table
}

// sessionRule is the session rule in parts, so that a negative control can swap one out.
type sessionRule struct {
	// anchors keeps the open and the pongs, as a session does when they arrive in this order.
	anchors  func(opened anchor, pongs []anchor) []anchor
	deadline func(anchors []anchor, leaseStartedAfter, ttl time.Duration) time.Time
}

var sdkSessionRule = sessionRule{
	anchors: func(opened anchor, pongs []anchor) []anchor {
		kept := newSessionAnchors(opened.sentAt)
		for _, p := range pongs {
			kept.addPong(p.sentAt, p.receivedAfter.Milliseconds())
		}
		return kept.list()
	},
	deadline: latestAnchoredDeadline,
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// sessionMismatches plays every case; one line per case whose deadline differs.
func sessionMismatches(table sessionTable, rule sessionRule) []string {
	var found []string
	for _, c := range table.Cases {
		var pongs []anchor
		for _, p := range c.Pongs {
			pongs = append(pongs, anchor{sentAt: tableTime(p.SentAtMs), receivedAfter: msDuration(p.ReceivedAfterMs)})
		}
		anchors := rule.anchors(anchor{sentAt: tableTime(c.OpenedAtMs)}, pongs)
		got := rule.deadline(anchors, msDuration(c.Renewed.LeaseStartedAfterMs), msDuration(c.Renewed.TTLMs))
		gotMs := float64(got.Sub(tableOrigin)) / 1e6
		if math.Abs(gotMs-c.DeadlineMs) > table.PrecisionMs {
			found = append(found, fmt.Sprintf("%s: deadline %v, want %v", c.Name, gotMs, c.DeadlineMs))
		}
	}
	return found
}

func TestSessionDeadlineConformanceCases(t *testing.T) {
	for _, line := range sessionMismatches(loadSessionTable(t), sdkSessionRule) {
		t.Error(line)
	}
}

// Negative controls: a rule wrong in one way must miss at least one case.
func TestSessionDeadlineConformanceWrongRulesMissACase(t *testing.T) {
	table := loadSessionTable(t)
	ignorePongs, latePongs, latestAnchorWins, oneLatestPong, noDrift := sdkSessionRule, sdkSessionRule, sdkSessionRule, sdkSessionRule, sdkSessionRule
	ignorePongs.anchors = func(opened anchor, _ []anchor) []anchor { return []anchor{opened} }
	latePongs.deadline = func(anchors []anchor, started, ttl time.Duration) time.Time {
		var latest time.Time
		for _, a := range anchors { // a pong received after the renewal started counts too
			latest = laterDeadline(latest, LeaseDeadline(a.sentAt, started-a.receivedAfter, ttl))
		}
		return latest
	}
	latestAnchorWins.deadline = func(anchors []anchor, started, ttl time.Duration) time.Time {
		var last time.Time
		for _, a := range anchors {
			if a.receivedAfter <= started {
				last = LeaseDeadline(a.sentAt, started-a.receivedAfter, ttl)
			}
		}
		return last
	}
	oneLatestPong.anchors = func(opened anchor, pongs []anchor) []anchor {
		if len(pongs) == 0 {
			return []anchor{opened}
		}
		return []anchor{opened, pongs[len(pongs)-1]}
	}
	noDrift.deadline = func(anchors []anchor, started, ttl time.Duration) time.Time {
		var latest time.Time
		for _, a := range anchors {
			if a.receivedAfter <= started {
				latest = laterDeadline(latest, a.sentAt.Add(started-a.receivedAfter+ttl))
			}
		}
		return latest
	}
	for what, rule := range map[string]sessionRule{
		"pongs ignored (counted from the open only)":              ignorePongs,
		"a pong received after the renewal started counted":       latePongs,
		"the latest usable anchor wins, even an earlier deadline": latestAnchorWins,
		"only the latest pong kept":                               oneLatestPong,
		"no drift allowance":                                      noDrift,
	} {
		if len(sessionMismatches(table, rule)) == 0 {
			t.Errorf("a rule with %s agrees with every case", what)
		}
	}
}
