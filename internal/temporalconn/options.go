package temporalconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/flotilla-gitops/flotilla/internal/codec"
)

// ClientOptions turns s into the SDK's options. Every file is read once here, so a wrong path stops the
// process at start, naming the flag; the client certificate and the API key are read again later as they
// change (see GetClientCertificate and the key's credentials).
func (s Settings) ClientOptions(logger log.Logger) (client.Options, error) {
	if len(s.envErr) > 0 {
		names := make([]string, 0, len(s.envErr))
		for n := range s.envErr {
			names = append(names, n)
		}
		sort.Strings(names)
		return client.Options{}, fmt.Errorf("--%s: %w", names[0], s.envErr[names[0]])
	}
	if s.Address == "" {
		return client.Options{}, errors.New("--address (env TEMPORAL_ADDRESS) is empty: give Temporal's frontend host:port")
	}
	if s.TLS && s.TLSDisabled {
		return client.Options{}, errors.New("TLS is both asked for and turned off: give --tls or --tls=false, not both")
	}
	opts := client.Options{HostPort: s.Address, Namespace: s.Namespace, Logger: logger, Identity: s.Identity, MetricsHandler: s.MetricsHandler}
	if s.TLSDisabled {
		if s.tlsFileGiven() {
			return client.Options{}, fmt.Errorf("--tls=false (or %s=false) turns TLS off, yet %s configures it: drop one", EnvTLS, s.tlsFlagGiven())
		}
		// Without this the SDK turns TLS on for an API key by itself.
		opts.ConnectionOptions.TLSDisabled = true
	} else if s.tlsWanted() {
		conf, err := s.tlsConfig()
		if err != nil {
			return client.Options{}, err
		}
		opts.ConnectionOptions.TLS = conf
	}
	creds, err := s.credentials()
	if err != nil {
		return client.Options{}, err
	}
	opts.Credentials = creds
	if s.RequireEncrypted && s.CodecKeyFile == "" {
		return client.Options{}, fmt.Errorf("--require-encrypted-payloads (or %s) needs --codec-key-file: nothing could be read", codec.EnvRequireEncrypted)
	}
	if s.CodecKeyFile != "" {
		c, err := codec.Load(s.CodecKeyFile)
		if err != nil {
			return client.Options{}, fmt.Errorf("--codec-key-file: %w", err)
		}
		if s.RequireEncrypted {
			c = c.Strict()
		}
		opts.DataConverter = c.DataConverter()
	} else {
		// Reads as the SDK's default would, but an encrypted payload names the missing flag.
		opts.DataConverter = codec.KeylessDataConverter()
	}
	return opts, nil
}

// tlsFlagGiven names the first TLS setting given, for an error about it.
func (s Settings) tlsFlagGiven() string {
	switch {
	case s.ServerCAFile != "":
		return "--tls-ca-file"
	case s.ClientCertFile != "":
		return "--tls-cert-file"
	case s.ClientKeyFile != "":
		return "--tls-key-file"
	case s.ServerName != "":
		return "--tls-server-name"
	}
	return "--tls-disable-host-verification"
}

func (s Settings) tlsConfig() (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName, InsecureSkipVerify: s.DisableHostVerification} //nolint:gosec // only when asked for
	if s.ServerCAFile != "" {
		pem, err := readFile("--tls-ca-file", s.ServerCAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca-file %s: no PEM certificate in it", s.ServerCAFile)
		}
		conf.RootCAs = pool
	}
	if (s.ClientCertFile == "") != (s.ClientKeyFile == "") {
		return nil, errors.New("--tls-cert-file and --tls-key-file go together: give both or neither")
	}
	if s.ClientCertFile != "" {
		cert, err := loadKeyPair(s.ClientCertFile, s.ClientKeyFile)
		if err != nil {
			return nil, err
		}
		if cert.Leaf != nil && time.Now().After(cert.Leaf.NotAfter) {
			return nil, fmt.Errorf("--tls-cert-file %s: the certificate expired at %s", s.ClientCertFile, cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		certFile, keyFile := s.ClientCertFile, s.ClientKeyFile
		// Called at each handshake, which gRPC makes at every reconnection: a certificate renewed on disk
		// (cert-manager, a mounted Secret) is presented without restarting the process.
		conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return loadKeyPair(certFile, keyFile)
		}
	}
	return conf, nil
}

// loadKeyPair reads the pair itself rather than through tls.LoadX509KeyPair so that an error names the
// flag of the file at fault; the messages of tls.X509KeyPair describe, never quote, the PEM.
func loadKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := readFile("--tls-cert-file", certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readFile("--tls-key-file", keyFile)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s and --tls-key-file %s: %w", certFile, keyFile, err)
	}
	return &cert, nil
}

// readFile names the flag and the path once; os's own errors repeat the path, which reads badly after it.
func readFile(flagName, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fileError(flagName, path, err)
	}
	return data, nil
}

func fileError(flagName, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", flagName, path, err)
}

// credentials is the API key of --api-key-file or TEMPORAL_API_KEY, nil with neither.
func (s Settings) credentials() (client.Credentials, error) {
	if s.APIKeyFile != "" {
		k := &keyFile{path: s.APIKeyFile}
		if _, err := k.get(context.Background()); err != nil {
			return nil, err
		}
		return client.NewAPIKeyDynamicCredentials(k.get), nil
	}
	if key := strings.TrimSpace(os.Getenv(EnvAPIKey)); key != "" {
		return client.NewAPIKeyStaticCredentials(key), nil
	}
	return nil, nil
}

// keyFile reads an API key file again whenever it changes. Each call to Temporal asks for the key, so
// a stat decides, not a read: a Kubernetes Secret is rotated by swapping a symlink, which changes what
// the stat sees.
type keyFile struct {
	path string

	mu   sync.Mutex
	mod  time.Time
	size int64
	key  string
}

func (k *keyFile) get(context.Context) (string, error) {
	fi, err := os.Stat(k.path)
	if err != nil {
		return "", fileError("--api-key-file", k.path, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != "" && fi.ModTime().Equal(k.mod) && fi.Size() == k.size {
		return k.key, nil
	}
	data, err := readFile("--api-key-file", k.path)
	if err != nil {
		return "", err
	}
	// A trailing newline is how editors and `echo` leave a file; anything else is no key, and the error
	// says so without showing what the file holds.
	key := strings.TrimSpace(string(data))
	switch {
	case key == "":
		return "", fmt.Errorf("--api-key-file %s: the file is empty", k.path)
	case strings.ContainsAny(key, " \t\r\n"):
		return "", fmt.Errorf("--api-key-file %s: holds more than one word; it should hold the API key alone", k.path)
	}
	k.key, k.mod, k.size = key, fi.ModTime(), fi.Size()
	return key, nil
}

func envAPIKey() string { return os.Getenv(EnvAPIKey) }
