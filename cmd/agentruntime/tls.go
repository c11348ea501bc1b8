package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
)

// loadServerTLS reads the server's certificate and key (--tls-cert,
// --tls-key): both or neither. Neither: nil, the port serves in clear.
// The files are read once; a renewed certificate takes a restart.
func loadServerTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "":
		return nil, errors.New("--tls-key needs --tls-cert (both or neither)")
	case keyFile == "":
		return nil, errors.New("--tls-cert needs --tls-key (both or neither)")
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// pinnedTLS trusts exactly the server's own certificate: the in-process
// worker of `dev --tls-cert` dials its own port by a loopback address the
// certificate need not name, signed by a CA this process need not trust.
func pinnedTLS(server *tls.Config) *tls.Config {
	leaf := server.Certificates[0].Certificate[0]
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification is VerifyConnection's: the peer must present this
		// very certificate.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, leaf) {
				return errors.New("the server did not present the certificate of --tls-cert")
			}
			return nil
		},
	}
}

// clientTLS is the client side of --tls and --tls-ca: nil for plaintext,
// the system roots for --tls, the CA file's certificates alone for
// --tls-ca (which implies --tls).
func clientTLS(on bool, caFile string) (*tls.Config, error) {
	if caFile == "" {
		if !on {
			return nil, nil
		}
		return &tls.Config{MinVersion: tls.VersionTLS12}, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", caFile)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, nil
}

// loopbackListen says whether only this machine can reach listen: an IP
// literal that is loopback, or a name that resolves only to loopback
// addresses. ":7070" (every interface) is not.
func loopbackListen(ctx context.Context, listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, fmt.Errorf("--listen %q: %w", listen, err)
	}
	if host == "" {
		return false, nil
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback(), nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil || len(addrs) == 0 {
		return false, nil
	}
	for _, a := range addrs {
		if !a.IP.IsLoopback() {
			return false, nil
		}
	}
	return true, nil
}

// requirePrivateCredentials refuses to take credentials in clear beyond
// loopback (a server without TLS): with --auth, API keys and tokens would
// cross the network readable by anyone on the path.
func requirePrivateCredentials(ctx context.Context, listen string) error {
	loopback, err := loopbackListen(ctx, listen)
	if err != nil {
		return err
	}
	if !loopback {
		return fmt.Errorf("refusing to take bearer credentials in clear on %s, which is not a loopback address: serve TLS with --tls-cert FILE --tls-key FILE, or pass --insecure-plaintext when something in front of it terminates TLS", listen)
	}
	return nil
}
