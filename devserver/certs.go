package devserver

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/custos-dev/custos/internal/atomicfile"
)

// Loopback is not a boundary between the users of one machine, so the
// embedded server's ports require mutual TLS. The certificates live in a
// private directory (0700, files 0600) of the user who runs the server: a
// client that can read the client key is that user; any other user fails
// the handshake.
//
// The CA's private key is never written anywhere: it signs the server and
// client certificates once and is dropped, so not even a stolen file lets
// anyone mint another client certificate. When the set is missing,
// incomplete, near expiry or was left readable by others, a whole new set
// (new CA included) replaces it; clients read the files on every start, so
// they follow.

// ServerName is the name clients verify the server certificate against. The
// certificate also carries 127.0.0.1 and ::1, but one fixed name works for
// every loopback address the server may bind.
const ServerName = "localhost"

const (
	caValidity   = 2 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// renewBefore: a set that expires sooner than this is replaced at start,
	// so a long-running server does not outlive its certificates.
	renewBefore = 30 * 24 * time.Hour
	// backdate tolerates small clock differences between processes.
	backdate = time.Hour
)

// TLSFiles names the PEM files of the embedded server's certificates.
type TLSFiles struct {
	Dir        string
	CA         string // CA certificate: what clients trust
	ServerCert string
	ServerKey  string
	ClientCert string // the owner's client certificate
	ClientKey  string
}

// TLSFilesIn returns the file names inside dir; nothing is read or created.
func TLSFilesIn(dir string) TLSFiles {
	return TLSFiles{
		Dir:        dir,
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"),
		ServerKey:  filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),
	}
}

func (f TLSFiles) all() []string {
	return []string{f.CA, f.ServerCert, f.ServerKey, f.ClientCert, f.ClientKey}
}

// EnsureCerts makes dir hold a valid certificate set, generating a new one
// when needed, and returns its files. It refuses a directory or file owned by
// another user, and makes the directory private if it is not.
func EnsureCerts(dir string, now time.Time) (TLSFiles, error) {
	f := TLSFilesIn(dir)
	if err := privateDir(dir); err != nil {
		return f, err
	}
	problem, err := checkCerts(f, now)
	if err != nil {
		return f, err
	}
	if problem == nil {
		return f, nil
	}
	if err := generateCerts(f, now); err != nil {
		return f, err
	}
	return f, nil
}

// privateDir creates dir (0700) or checks that it belongs to this user and
// tightens its mode to 0700.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("devserver: creating certificate directory: %w", err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("devserver: certificate directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("devserver: certificate directory %s is not a directory (a symlink?)", dir)
	}
	if err := ownedByMe(dir, info); err != nil {
		return err
	}
	if info.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("devserver: making %s private: %w", dir, err)
		}
	}
	return nil
}

// checkCerts returns why the set in f cannot be used as is (nil: it can).
// An error means something is wrong that a new set would not fix.
func checkCerts(f TLSFiles, now time.Time) (problem, err error) {
	for _, name := range f.all() {
		info, err := os.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s is missing", name), nil
		}
		if err != nil {
			return nil, fmt.Errorf("devserver: checking %s: %w", name, err)
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("devserver: %s is not a regular file; remove it", name)
		}
		if err := ownedByMe(name, info); err != nil {
			return nil, err
		}
		if info.Mode().Perm()&0o077 != 0 {
			// Someone else may have read it: a new CA makes that copy useless.
			return fmt.Errorf("%s was readable by others", name), nil
		}
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("devserver: reading %s: %w", f.CA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s holds no certificate", f.CA), nil
	}
	for _, leaf := range []struct {
		cert, key string
		usage     []x509.ExtKeyUsage
		server    bool
	}{
		{f.ServerCert, f.ServerKey, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, true},
		{f.ClientCert, f.ClientKey, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, false},
	} {
		pair, err := tls.LoadX509KeyPair(leaf.cert, leaf.key)
		if err != nil {
			return fmt.Errorf("%s: %w", leaf.cert, err), nil
		}
		cert := pair.Leaf
		if now.Add(renewBefore).After(cert.NotAfter) {
			return fmt.Errorf("%s expires %s", leaf.cert, cert.NotAfter.Format(time.DateOnly)), nil
		}
		opts := x509.VerifyOptions{Roots: pool, CurrentTime: now.Add(renewBefore), KeyUsages: leaf.usage}
		if leaf.server {
			opts.DNSName = ServerName
		}
		if _, err := cert.Verify(opts); err != nil {
			return fmt.Errorf("%s: %w", leaf.cert, err), nil
		}
		if leaf.server && !slices.EqualFunc(cert.IPAddresses, serverIPs(), net.IP.Equal) {
			return fmt.Errorf("%s: unexpected IP addresses %v", leaf.cert, cert.IPAddresses), nil
		}
	}
	return nil, nil
}

func serverIPs() []net.IP { return []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback} }

// generateCerts writes a new CA, server and client certificate set.
func generateCerts(f TLSFiles, now time.Time) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("devserver: generating CA key: %w", err)
	}
	host, _ := os.Hostname()
	ca := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("custos embedded Temporal CA (uid %d on %s)", os.Geteuid(), host)},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := sign(ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return fmt.Errorf("devserver: parsing new CA: %w", err)
	}

	// The server certificate is also the internode client certificate (the
	// history and matching services dial each other with it), so it may
	// authenticate clients too.
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "custos embedded Temporal server"},
		DNSNames:    []string{ServerName},
		IPAddresses: serverIPs(),
		NotBefore:   now.Add(-backdate),
		NotAfter:    now.Add(leafValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	client := &x509.Certificate{
		Subject:     pkix.Name{CommonName: fmt.Sprintf("custos owner (uid %d)", os.Geteuid())},
		NotBefore:   now.Add(-backdate),
		NotAfter:    now.Add(leafValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	files := map[string][]byte{f.CA: pemBlock("CERTIFICATE", caDER)}
	for _, leaf := range []struct {
		tmpl      *x509.Certificate
		cert, key string
	}{{server, f.ServerCert, f.ServerKey}, {client, f.ClientCert, f.ClientKey}} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("devserver: generating key: %w", err)
		}
		der, err := sign(leaf.tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return fmt.Errorf("devserver: encoding key: %w", err)
		}
		files[leaf.cert] = pemBlock("CERTIFICATE", der)
		files[leaf.key] = pemBlock("PRIVATE KEY", keyDER)
	}
	// Keys first and the CA last: a reader that races with this sees either
	// the old set or a new key with an old CA, which fails closed.
	for _, name := range []string{f.ServerKey, f.ClientKey, f.ServerCert, f.ClientCert, f.CA} {
		if err := writePrivate(name, files[name]); err != nil {
			return err
		}
	}
	return nil
}

func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, caKey *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("devserver: certificate serial: %w", err)
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("devserver: signing %q: %w", tmpl.Subject.CommonName, err)
	}
	return der, nil
}

func pemBlock(typ string, der []byte) []byte {
	var b bytes.Buffer
	_ = pem.Encode(&b, &pem.Block{Type: typ, Bytes: der})
	return b.Bytes()
}

// writePrivate replaces name with data, mode 0600, through a new file and a
// rename so no reader ever sees half a file.
func writePrivate(name string, data []byte) error {
	if err := atomicfile.Write(name, data, 0o600); err != nil {
		return fmt.Errorf("devserver: %w", err)
	}
	return nil
}

// ClientTLS is the TLS configuration of a client of the embedded server:
// the owner's certificate, and only this set's CA trusted.
func (f TLSFiles) ClientTLS() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("devserver: loading client certificate: %w", err)
	}
	pool, err := f.caPool()
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		ServerName:   ServerName,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

func (f TLSFiles) caPool() (*x509.CertPool, error) {
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("devserver: reading CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("devserver: %s holds no certificate", f.CA)
	}
	return pool, nil
}

// TemporalCLIFlags are the flags that point the Temporal CLI at the server
// on address with this set's certificates.
func (f TLSFiles) TemporalCLIFlags(address string) []string {
	return []string{
		"--address", address,
		"--tls-cert-path", f.ClientCert,
		"--tls-key-path", f.ClientKey,
		"--tls-ca-path", f.CA,
		"--tls-server-name", ServerName,
	}
}
