package localk8s

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the file paths of a test PKI shared by every cluster of an Env (all listen on 127.0.0.1, or
// on Options.Address as well).
type pki struct {
	CA, ServerCert, ServerKey, AdminCert, AdminKey, SAPub, SAKey string
}

func loadOrCreatePKI(dir, address string) (pki, error) {
	p := pki{
		CA: filepath.Join(dir, "ca.crt"), ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		AdminCert: filepath.Join(dir, "admin.crt"), AdminKey: filepath.Join(dir, "admin.key"),
		SAPub: filepath.Join(dir, "sa.pub"), SAKey: filepath.Join(dir, "sa.key"),
	}
	if _, err := os.Stat(p.SAKey); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, err
	}
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return p, err
	}
	now := time.Now().Add(-time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flotilla-local-ca"},
		NotBefore: now, NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return p, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP, dns []string, certPath, keyPath string) error {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: subject, NotBefore: now, NotAfter: now.Add(10 * 365 * 24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: ips, DNSNames: dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyPath, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
	}
	if err := writePEM(p.CA, "CERTIFICATE", caDER); err != nil {
		return p, err
	}
	if err := issue(2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth,
		serverIPs(address), []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		p.ServerCert, p.ServerKey); err != nil {
		return p, err
	}
	if err := issue(3, pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth,
		nil, nil, p.AdminCert, p.AdminKey); err != nil {
		return p, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return p, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return p, err
	}
	if err := writePEM(p.SAPub, "PUBLIC KEY", pub); err != nil {
		return p, err
	}
	return p, writePEM(p.SAKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// serverIPs are the addresses the API servers' certificate is valid for.
func serverIPs(address string) []net.IP {
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	if ip := net.ParseIP(address); ip != nil && !ip.Equal(ips[0]) {
		ips = append(ips, ip)
	}
	return ips
}
