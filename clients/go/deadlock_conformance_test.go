package holdfast

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/holdfast/holdfast/clients/go/internal/testrepo"
)

// clients/conformance/deadlock.json against this client's one rule (isDeadlock) and the error
// deadlockOr makes of each case's status: a *DeadlockError exactly when the table says so.

type deadlockCase struct {
	Name     string            `json:"name"`
	Code     codes.Code        `json:"code"`
	Metadata map[string]string `json:"metadata"`
	Message  string            `json:"message"`
	Deadlock bool              `json:"deadlock"`
}

func loadDeadlockCases(t *testing.T) []deadlockCase {
	raw, err := os.ReadFile(filepath.Join(testrepo.Root(t), "clients", "conformance", "deadlock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []deadlockCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Cases) == 0 {
		t.Fatal("deadlock.json has no cases")
	}
	return table.Cases
}

type deadlockRule func(code codes.Code, trailer metadata.MD, message string) bool

// deadlockMismatches is one line per case where rule differs from the table.
func deadlockMismatches(cases []deadlockCase, rule deadlockRule) []string {
	var found []string
	for _, c := range cases {
		if got := rule(c.Code, metadata.New(c.Metadata), c.Message); got != c.Deadlock {
			found = append(found, fmt.Sprintf("%s: %v, want %v", c.Name, got, c.Deadlock))
		}
	}
	return found
}

func TestDeadlockConformance(t *testing.T) {
	cases := loadDeadlockCases(t)
	if found := deadlockMismatches(cases, isDeadlock); len(found) > 0 {
		t.Fatalf("isDeadlock differs from deadlock.json:\n%s", strings.Join(found, "\n"))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := deadlockOr(status.Error(c.Code, c.Message), metadata.New(c.Metadata), "account-a")
			var deadlock *DeadlockError
			if errors.As(err, &deadlock) != c.Deadlock || errors.Is(err, ErrDeadlock) != c.Deadlock {
				t.Fatalf("deadlockOr gave %T %v, want a *DeadlockError: %v", err, err, c.Deadlock)
			}
			if status.Code(err) != c.Code || status.Convert(err).Message() != c.Message {
				t.Fatalf("status %v %q, want %v and the server's message unchanged", status.Code(err), status.Convert(err).Message(), c.Code)
			}
			if c.Deadlock && (deadlock.Lock != "account-a" || deadlock.Message != c.Message || !strings.Contains(err.Error(), `lock "account-a": `+c.Message)) {
				t.Fatalf("DeadlockError %+v (%q): want the lock and the message unchanged", deadlock, err)
			}
		})
	}
}

// Negative controls: a rule wrong in one way must miss at least one case.
func TestDeadlockConformanceWrongRules(t *testing.T) {
	cases := loadDeadlockCases(t)
	reason := func(trailer metadata.MD) bool { return slices.Contains(trailer.Get(deadlockReasonKey), deadlockReason) }
	wrong := map[string]deadlockRule{
		"any ABORTED": func(code codes.Code, _ metadata.MD, _ string) bool { return code == codes.Aborted },
		"metadata only": func(code codes.Code, trailer metadata.MD, _ string) bool {
			return code == codes.Aborted && reason(trailer)
		},
		"prefix anywhere in the message": func(code codes.Code, trailer metadata.MD, message string) bool {
			return code == codes.Aborted && (reason(trailer) || strings.Contains(message, deadlockPrefix))
		},
		"the reason's value case-folded": func(code codes.Code, trailer metadata.MD, message string) bool {
			folded := slices.ContainsFunc(trailer.Get(deadlockReasonKey), func(v string) bool { return strings.EqualFold(v, deadlockReason) })
			return code == codes.Aborted && (folded || strings.HasPrefix(message, deadlockPrefix))
		},
		"any code": func(_ codes.Code, trailer metadata.MD, message string) bool {
			return reason(trailer) || strings.HasPrefix(message, deadlockPrefix)
		},
	}
	for what, rule := range wrong {
		t.Run(what, func(t *testing.T) {
			if len(deadlockMismatches(cases, rule)) == 0 {
				t.Fatal("the table did not catch this wrong rule")
			}
		})
	}
}
