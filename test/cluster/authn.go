package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
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

// newClientCA returns the API server's client CA: a new self-signed CA (ECDSA P-256, as envtest's
// own) valid for ten years.
func newClientCA() (*clientCA, error) {
	return newCA("operator-sweeper-test-client-ca")
}

// newCA returns a new self-signed CA named commonName, valid for ten years.
func newCA(commonName string) (*clientCA, error) {
	now := time.Now()
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"operator-sweeper"}},
		NotBefore:             now.Add(-clientCABackdate).UTC(),
		NotAfter:              now.AddDate(10, 0, 0).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, key, err := sign(template, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("CA %s: %w", commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse the certificate of CA %s: %w", commonName, err)
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
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		NotBefore:   notBefore.UTC(),
		NotAfter:    notAfter.UTC(),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, key, err := sign(template, a.cert, a.key)
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

// SelfSignedServingCert returns a serving certificate for hosts (IP addresses or DNS names) that
// is its own CA, valid from an hour ago for a day, and its PEM: what a test server presents, and
// the one certificate a client needs to trust it (a kubeconfig's certificate-authority, a
// webhook's caBundle).
func SelfSignedServingCert(hosts ...string) (cert tls.Certificate, caPEM []byte, err error) {
	if len(hosts) == 0 {
		return tls.Certificate{}, nil, errors.New("serving certificate: no hosts")
	}
	now := time.Now()
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: hosts[0], Organization: []string{"operator-sweeper"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, host := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, host)
		}
	}
	der, key, err := sign(template, nil, nil)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("serving certificate for %v: %w", hosts, err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// sign completes template with a random serial number and a new ECDSA P-256 key (as envtest's
// own certificates), and signs it as parent with parentKey, or by itself if parent is nil. It
// returns the certificate, DER, and its key.
func sign(template, parent *x509.Certificate, parentKey crypto.Signer) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate a key: %w", err)
	}
	if template.SerialNumber, err = newSerial(); err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create the certificate of %q: %w", template.Subject.CommonName, err)
	}
	return der, key, nil
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

// UntrustedClientCertificate is ClientCertificate signed by a new CA that nothing trusts: it
// returns a client certificate, its key, and the certificate of the CA that signed it, all PEM. It is for tests of credentials the API server must reject for their CA alone.
func UntrustedClientCertificate(user string, groups []string, notBefore, notAfter time.Time) (certPEM, keyPEM, caPEM []byte, err error) {
	// Named apart from the client CA, so that nothing, the API server's log included, confuses them.
	ca, err := newCA("operator-sweeper-test-untrusted-ca")
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, keyPEM, err = ca.issue(user, groups, notBefore, notAfter)
	return certPEM, keyPEM, ca.certPEM, err
}

// ClientCA returns the PEM certificate of the CA the API server trusts for client certificates,
// which signs those of Config and of ClientCertificate.
func (c *Cluster) ClientCA() []byte {
	return append([]byte(nil), c.clientCA.certPEM...)
}
