package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ErrTLSFiles is wrapped by the errors of LoadTLS.
var ErrTLSFiles = errors.New("server: bad TLS files")

// LoadTLS returns the TLS configuration of a server with the certificate
// chain and key in the PEM files certFile and keyFile. With clientCAFile
// (PEM, one or more certificates) it requires and verifies client
// certificates signed by those CAs (mutual TLS). Everything else is
// crypto/tls's defaults: TLS 1.2 and later, its cipher suites.
func LoadTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTLSFiles, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCAFile != "" {
		pool, err := LoadCertPool(clientCAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// LoadCertPool reads the PEM certificates of path into a pool (a CA a
// client verifies the server with, or the server its clients with).
func LoadCertPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTLSFiles, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: %s: no PEM certificate", ErrTLSFiles, path)
	}
	return pool, nil
}
