package holdfast

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"syscall"
	"time"
)

// probeTimeout bounds each step of diagnose: a server that answers at all answers quickly.
const probeTimeout = 2 * time.Second

// http2Preface is what a gRPC client sends first: the HTTP/2 connection preface and an empty
// SETTINGS frame. An HTTP/1 server answers it with an HTTP/1 error; a TLS server with an alert.
var http2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")

// diagnose opens a connection of its own to addr to find out why gRPC could not: it returns a
// *DialError for a cause it recognises, nil when it finds none (the server may be starting).
func diagnose(ctx context.Context, addr string, s Security) *DialError {
	if strings.Contains(addr, ":/") || strings.HasPrefix(addr, "unix:") {
		return nil // a resolver target: no single TCP address to look at
	}
	ctx, cancel := context.WithTimeout(ctx, 3*probeTimeout)
	defer cancel()
	raw, err := (&net.Dialer{Timeout: probeTimeout}).DialContext(ctx, "tcp", addr)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &DialError{Addr: addr, Err: err,
			Cause: "nothing listens there (connection refused): is the holdfast server running, and is this the port of its --listen?"}
	}
	if err != nil {
		return &DialError{Addr: addr, Err: err, Cause: "no TCP connection: " + err.Error()}
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(probeTimeout))
	if s.TLS || s.CA != nil || s.Cert != nil || s.ServerName != "" {
		return diagnoseTLS(ctx, raw, addr, s)
	}
	answer := firstBytes(raw, http2Preface)
	switch {
	case bytes.HasPrefix(answer, []byte("HTTP/1")):
		return &DialError{Addr: addr, Cause: httpListenerCause}
	case len(answer) > 0 && (answer[0] == 0x15 || answer[0] == 0x16): // a TLS alert or handshake record
		return &DialError{Addr: addr, Cause: wantsTLSCause}
	case len(answer) == 0 && speaksTLS(ctx, addr):
		return &DialError{Addr: addr, Cause: wantsTLSCause}
	}
	return nil
}

const (
	httpListenerCause = "it answers HTTP/1, not gRPC: this looks like holdfast's --http-listen port (dashboard and metrics); give the port of its --listen"
	wantsTLSCause     = "the server speaks TLS and this client does not: set Security.TLS (and Security.CA when its certificate is from a private CA)"
)

// firstBytes sends hello and returns what the server answers first (nil when it says nothing).
func firstBytes(conn net.Conn, hello []byte) []byte {
	if _, err := conn.Write(hello); err != nil {
		return nil
	}
	buf := make([]byte, 16)
	n, _ := conn.Read(buf)
	return buf[:n]
}

// speaksTLS reports whether a TLS handshake with addr gets as far as the server's certificate.
func speaksTLS(ctx context.Context, addr string) bool {
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: probeTimeout}, Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // only asks whether TLS is spoken
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return strings.Contains(err.Error(), "remote error: tls:")
	}
	conn.Close()
	return true
}

// diagnoseTLS runs this client's own TLS handshake on raw and names what went wrong.
func diagnoseTLS(ctx context.Context, raw net.Conn, addr string, s Security) *DialError {
	config, err := tlsConfig(s)
	if err != nil {
		return &DialError{Addr: addr, Cause: err.Error(), Err: err}
	}
	if config.ServerName == "" {
		config.ServerName, _, _ = net.SplitHostPort(addr)
	}
	conn := tls.Client(raw, config)
	err = conn.HandshakeContext(ctx)
	var header tls.RecordHeaderError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &header) && bytes.HasPrefix(header.RecordHeader[:], []byte("HTTP/")):
		return &DialError{Addr: addr, Err: err, Cause: httpListenerCause}
	case errors.As(err, &header):
		return &DialError{Addr: addr, Err: err, Cause: "the server does not speak TLS and this client does: drop Security.TLS, CA and Cert for a plaintext server, or give the port of its TLS listener"}
	case errors.As(err, &unknownCA):
		return &DialError{Addr: addr, Err: err, Cause: "its certificate is not signed by a CA this client trusts: set Security.CA to the CA that signed it"}
	case errors.As(err, &hostname):
		return &DialError{Addr: addr, Err: err, Cause: "its certificate is not for " + hostname.Host + ": set Security.ServerName to a name the certificate carries"}
	case errors.As(err, &invalid):
		return &DialError{Addr: addr, Err: err, Cause: "its certificate is not valid: " + invalid.Error()}
	case err != nil && strings.Contains(err.Error(), "remote error: tls:"):
		return &DialError{Addr: addr, Err: err, Cause: "the server refused the TLS handshake (" + err.Error() + "): check Security.Cert and Key, its client CA"}
	case err != nil:
		return &DialError{Addr: addr, Err: err, Cause: "TLS handshake failed: " + err.Error()}
	}
	// With TLS 1.3 a refused client certificate shows up on the first read, not in the handshake.
	if _, err := conn.Write(http2Preface); err == nil {
		_, err = conn.Read(make([]byte, 16))
		if err != nil && strings.Contains(err.Error(), "remote error: tls:") {
			return &DialError{Addr: addr, Err: err, Cause: "the server refused this client's certificate (" + strings.TrimPrefix(err.Error(), "remote error: ") +
				"): mutual TLS wants Security.Cert and Key signed by the server's client CA"}
		}
	}
	return nil
}
