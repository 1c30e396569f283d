// Package fencing lets the resource a holdfast lock protects enforce the lock's fencing tokens:
// a holder's requests carry its fence (HTTP headers or gRPC metadata: the signed fence of
// clients/conformance/signed-fence.md and the unsigned pair of clients/conformance/fencing.json),
// and a guard in front of the resource refuses a fence holdfast did not sign for this resource's
// lock before it asks its store, then a token older than the newest it has seen for that lock. The
// store that remembers the newest token compares and records in one step (see Store), so two
// requests cannot both pass with tokens out of order.
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
// HeaderFence and MetadataFence carry the signed fence, the others the unsigned pair.
const (
	HeaderFence   = "Holdfast-Fence"
	HeaderLock    = "Holdfast-Fence-Lock"
	HeaderToken   = "Holdfast-Fence-Token"
	MetadataFence = "holdfast-fence"
	MetadataLock  = "holdfast-fence-lock"
	MetadataToken = "holdfast-fence-token"
)

// Fence is what a request carries, and what a guard admitted (FromContext): the lock and that
// grant's fencing token; for a signed fence also the namespace, the key that signed it and the
// lease's end (Unix ms by the server's clock) when the fence states one. An unsigned fence has no
// namespace, key id or lease end, and Signed false.
type Fence struct {
	Namespace   string
	Lock        string
	Token       uint64
	LeaseEndMs  uint64
	HasLeaseEnd bool
	KeyID       string
	Signed      bool
}

// BadFenceError says why a request's fence cannot be read (HTTP 400, gRPC INVALID_ARGUMENT).
// Kind is "missing" or "malformed", Field is "fence" (the signed fence), "lock" or "token",
// Header the header or metadata key that was wrong. Reason never quotes the value.
type BadFenceError struct {
	Kind, Field, Header string
	Reason              string
}

func (e *BadFenceError) Error() string {
	if e.Kind == "missing" {
		return fmt.Sprintf("missing fence: header %s is required", e.Header)
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
	lock, why := decodeName(lockText)
	if why != "" {
		return Fence{}, &BadFenceError{Kind: "malformed", Field: "lock", Header: lockHeader, Reason: why}
	}
	return Fence{Lock: lock, Token: token}, nil
}

// decodeName reads a percent-encoded name (a lock or a namespace); why says what is wrong.
func decodeName(text string) (name, why string) {
	name, err := url.PathUnescape(text)
	switch {
	case err != nil:
		return "", "is not valid percent-encoding"
	case !utf8.ValidString(name):
		return "", "does not decode to UTF-8"
	case name == "":
		return "", "is empty"
	}
	return name, ""
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
