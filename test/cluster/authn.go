package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// clientCA is the API server's authenticator: client certificates signed by a CA of ours. It does
// what envtest's default (controlplane.CertAuthn) does, but envtest keeps that CA's key to itself,
// and tests need it to issue the certificates the API server must reject for one reason only, an
// expired one above all (see Cluster.ClientCertificate).
type clientCA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	// file is the API server's --client-ca-file, in the working directory Configure gives.
	file string
}

var _ envtest.Authn = (*clientCA)(nil)

const (
	// clientCABackdate is how far back the CA's validity starts, so that a certificate issued
	// with dates in the past (an expired one) lies within its CA's validity, as in real life.
	clientCABackdate = 365 * 24 * time.Hour
	// userCertValidity is how long the certificates of AddUser (the admin's of Cluster.Config)
	// are valid: longer than any test or demo runs.
	userCertValidity = 365 * 24 * time.Hour
)

// newClientCA returns a new self-signed CA (ECDSA P-256, as envtest's own) valid for ten years.
func newClientCA() (*clientCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate the client CA's key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "operator-sweeper-test-client-ca", Organization: []string{"operator-sweeper"}},
		NotBefore:             now.Add(-clientCABackdate).UTC(),
		NotAfter:              now.AddDate(10, 0, 0).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create the client CA's certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse the client CA's certificate: %w", err)
	}
	return &clientCA{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

// Configure points the API server's --client-ca-file at a file in workDir, written by Start.
func (a *clientCA) Configure(workDir string, args *envtest.Arguments) error {
	a.file = filepath.Join(workDir, "client-ca.crt")
	args.Set("client-ca-file", a.file)
	return nil
}

// Start writes the CA's certificate where Configure said; envtest calls it just before it starts
// the API server.
func (a *clientCA) Start() error {
	if a.file == "" {
		return errors.New("client CA: Start called before Configure")
	}
	if err := os.WriteFile(a.file, a.certPEM, 0o600); err != nil {
		return fmt.Errorf("write the client CA's certificate: %w", err)
	}
	return nil
}

// AddUser returns a copy of baseCfg that authenticates as user with a certificate of the CA. This
// is how envtest makes its admin (group system:masters), Cluster.Config.
func (a *clientCA) AddUser(user envtest.User, baseCfg *rest.Config) (*rest.Config, error) {
	now := time.Now()
	cert, key, err := a.issue(user.Name, user.Groups, now, now.Add(userCertValidity))
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(baseCfg)
	cfg.CertData, cfg.KeyData = cert, key
	return cfg, nil
}

// Stop does nothing: the file is in envtest's working directory, which envtest removes.
func (a *clientCA) Stop() error { return nil }

// issue returns a client certificate of the CA for user in groups, as the API server reads them
// (CommonName, Organization), valid from notBefore to notAfter, and its key; both PEM.
func (a *clientCA) issue(user string, groups []string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate a key for %s: %w", user, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    notBefore.UTC(),
		NotAfter:     notAfter.UTC(),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("issue a client certificate for %s: %w", user, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the key of %s: %w", user, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// newSerial returns a random serial number: certificates are issued from parallel tests, and a
// counter would need a lock for nothing.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return serial, nil
}

// ClientCertificate returns a client certificate, and its key, both PEM, for user in groups,
// valid from notBefore to notAfter and signed by the CA the API server trusts for client
// certificates (its --client-ca-file). It is for tests of credentials the API server must reject
// for the right reason: a certificate that differs from an accepted one only in its dates is
// rejected for its dates, not for a CA the server never trusted. Dates up to a year in the past
// lie within the CA's validity.
func (c *Cluster) ClientCertificate(user string, groups []string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	return c.clientCA.issue(user, groups, notBefore, notAfter)
}

// ClientCA returns the PEM certificate of the CA the API server trusts for client certificates,
// which signs those of Config and of ClientCertificate.
func (c *Cluster) ClientCA() []byte {
	return append([]byte(nil), c.clientCA.certPEM...)
}
