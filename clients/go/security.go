package holdfast

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Security says how to reach a server that wants TLS, a client certificate or an API key. The zero
// value is plaintext without a key.
type Security struct {
	// TLS connects with TLS, trusting the system's CAs unless CA is set. CA, Cert or ServerName imply it.
	TLS bool
	// CA is the PEM CA that signed the server's certificate.
	CA []byte
	// Cert and Key are this client's PEM certificate and private key, for mutual TLS.
	Cert, Key []byte
	// ServerName is the name the server's certificate must carry when it is not the dialled host.
	ServerName string
	// APIKey is sent on every call as the metadata "authorization: Bearer <APIKey>".
	APIKey string
}

// DialOptions returns the grpc.NewClient options for s: transport credentials (TLS or
// plaintext), with an API key per-RPC credentials that send it, and interceptors that turn a
// deadlock's ABORTED (Acquire, AcquireSet, Hold, HoldSet) into a *DeadlockError.
//
//	opts, err := holdfast.DialOptions(holdfast.Security{CA: ca, Cert: cert, Key: key, APIKey: key})
//	conn, err := grpc.NewClient("locks.internal:50051", opts...)
func DialOptions(s Security) ([]grpc.DialOption, error) {
	var opts []grpc.DialOption
	if s.TLS || s.CA != nil || s.Cert != nil || s.ServerName != "" {
		config, err := tlsConfig(s)
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(config)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if s.APIKey != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(apiKey(s.APIKey)))
	}
	opts = append(opts, grpc.WithChainUnaryInterceptor(deadlockUnary), grpc.WithChainStreamInterceptor(deadlockStreams))
	return opts, nil
}

func tlsConfig(s Security) (*tls.Config, error) {
	config := &tls.Config{ServerName: s.ServerName, MinVersion: tls.VersionTLS12}
	if s.CA != nil {
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(s.CA) {
			return nil, errors.New("holdfast: Security.CA holds no PEM certificate")
		}
	}
	if (s.Cert == nil) != (s.Key == nil) {
		return nil, errors.New("holdfast: Security.Cert and Security.Key go together")
	}
	if s.Cert != nil {
		pair, err := tls.X509KeyPair(s.Cert, s.Key)
		if err != nil {
			return nil, err
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return config, nil
}

// apiKey sends the key with every call. It does not require transport security: a server on
// loopback may take keys over plaintext.
type apiKey string

func (k apiKey) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(k)}, nil
}

func (apiKey) RequireTransportSecurity() bool { return false }
