// Package fencing lets the resource a holdfast lock protects enforce the lock's fencing tokens:
// a holder's requests carry its lock name and token (HTTP headers or gRPC metadata, the wire
// convention of clients/conformance/fencing.json), and a guard in front of the resource refuses a
// request whose token is older than the newest it has seen for that lock. The store that remembers
// the newest token compares and records in one step (see Store), so two requests cannot both pass
// with tokens out of order.
package fencing

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The wire names of a fence: HTTP headers and gRPC metadata keys (metadata keys are lower case).
const (
	HeaderLock    = "Holdfast-Fence-Lock"
	HeaderToken   = "Holdfast-Fence-Token"
	MetadataLock  = "holdfast-fence-lock"
	MetadataToken = "holdfast-fence-token"
)

// Fence is what a request carries: the lock it was made under and that grant's fencing token.
type Fence struct {
	Lock  string
	Token uint64
}

// BadFenceError says why a request's fence cannot be read. Kind is "missing" or "malformed",
// Field is "lock" or "token", Header the header or metadata key that was wrong.
type BadFenceError struct {
	Kind, Field, Header string
	Reason              string
}

func (e *BadFenceError) Error() string {
	if e.Kind == "missing" {
		return fmt.Sprintf("missing fence: %s is not set", e.Header)
	}
	return fmt.Sprintf("malformed fence: %s %s", e.Header, e.Reason)
}

// StaleError is a refusal: the request's token is older than the newest seen for its lock.
type StaleError struct {
	Lock          string
	Token, Newest uint64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("stale fencing token for lock %q: %d is older than %d, the newest seen", e.Lock, e.Token, e.Newest)
}

// IsStale reports whether err is (or wraps) a *StaleError.
func IsStale(err error) bool {
	var stale *StaleError
	return errors.As(err, &stale)
}

// EncodeLock percent-encodes a lock name as JavaScript's encodeURIComponent does, so every
// language's clients write the same header for the same name.
func EncodeLock(lock string) string {
	var b strings.Builder
	for i := 0; i < len(lock); i++ {
		c := lock[i]
		if isUnreserved(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0
}

// FormatToken writes a token as the wire wants it: unsigned decimal without leading zeros.
func FormatToken(token uint64) string { return strconv.FormatUint(token, 10) }

var decimal = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// parse reads a fence from the values of its two headers (nil: not present). The token is read
// first, so a request with neither header is told about the token.
func parse(lockValues, tokenValues []string, lockHeader, tokenHeader string) (Fence, error) {
	tokenText, err := single(tokenValues, "token", tokenHeader)
	if err != nil {
		return Fence{}, err
	}
	if !decimal.MatchString(tokenText) {
		return Fence{}, &BadFenceError{Kind: "malformed", Field: "token", Header: tokenHeader,
			Reason: "must be an unsigned decimal integer without sign, spaces or leading zeros"}
	}
	token, err := strconv.ParseUint(tokenText, 10, 64)
	if err != nil {
		return Fence{}, &BadFenceError{Kind: "malformed", Field: "token", Header: tokenHeader, Reason: "is past 18446744073709551615"}
	}
	lockText, err := single(lockValues, "lock", lockHeader)
	if err != nil {
		return Fence{}, err
	}
	lock, err := url.PathUnescape(lockText)
	switch {
	case err != nil:
		return Fence{}, &BadFenceError{Kind: "malformed", Field: "lock", Header: lockHeader, Reason: "is not valid percent-encoding"}
	case !utf8.ValidString(lock):
		return Fence{}, &BadFenceError{Kind: "malformed", Field: "lock", Header: lockHeader, Reason: "does not decode to UTF-8"}
	case lock == "":
		return Fence{}, &BadFenceError{Kind: "malformed", Field: "lock", Header: lockHeader, Reason: "is empty"}
	}
	return Fence{Lock: lock, Token: token}, nil
}

func single(values []string, field, header string) (string, error) {
	switch len(values) {
	case 0:
		return "", &BadFenceError{Kind: "missing", Field: field, Header: header}
	case 1:
		return values[0], nil
	default:
		return "", &BadFenceError{Kind: "malformed", Field: field, Header: header, Reason: "is given more than once"}
	}
}
