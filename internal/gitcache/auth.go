package gitcache

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"

	"github.com/flotilla-gitops/flotilla/internal/credentials"
)

// sshConnectTimeout bounds an SSH connection's TCP connect: go-git dials SSH without the caller's context.
const sshConnectTimeout = 30 * time.Second

// access is how one fetch reaches its remote.
type access struct {
	auth     transport.AuthMethod
	caBundle []byte
	insecure bool
	// secret is the clientSecretName, for messages.
	secret string
}

// access resolves a remote's clientSecretName into the auth its URL's transport takes: basic auth (or a
// token) over HTTP(S), a key and a host key check over SSH. A secret's CA bundle and insecureSkipTLSVerify
// add to the GitRepo's own.
func (c *Cache) access(r Remote) (access, error) {
	a := access{caBundle: r.CABundle, insecure: r.InsecureSkipTLSVerify, secret: r.Secret}
	if r.Secret == "" {
		return a, nil
	}
	if c.Creds == nil {
		return a, fmt.Errorf("clientSecretName %q: %w", r.Secret, credentials.ErrNoCredentials)
	}
	sec, err := c.Creds.For(r.Workspace, r.Secret, r.URL)
	if err != nil {
		return a, fmt.Errorf("clientSecretName: %w", err)
	}
	ep, err := transport.NewEndpoint(r.URL)
	if err != nil {
		return a, errUnparsableURL
	}
	switch ep.Protocol {
	case "ssh":
		a.auth, err = c.sshAuth(r.Secret, sec, ep)
		return a, err
	case "http", "https":
		if ep.Protocol == "http" {
			return a, fmt.Errorf("clientSecretName %q: credentials are never sent over plain http://, where anyone on the way reads them: use the repository's https:// URL", r.Secret)
		}
		if len(sec.Password) == 0 {
			return a, fmt.Errorf("clientSecretName %q has no password (or token), which an %s:// repository needs", r.Secret, ep.Protocol)
		}
		user, password := string(sec.Username), string(sec.Password)
		if user == "" {
			// A token alone goes as the user name, as Fleet sends it.
			user, password = password, ""
		}
		a.auth = &http.BasicAuth{Username: user, Password: password}
		a.caBundle = joinPEM(a.caBundle, sec.CABundle)
		a.insecure = a.insecure || sec.InsecureSkipTLSVerify
		return a, nil
	}
	return a, fmt.Errorf("clientSecretName %q: a %s repository takes no credentials", r.Secret, ep.Protocol)
}

func joinPEM(a, b []byte) []byte {
	if len(a) == 0 || len(b) == 0 {
		return append(a[:len(a):len(a)], b...)
	}
	return append(append(a[:len(a):len(a)], '\n'), b...)
}

// explain says that a failure is one of authentication, naming the secret used (or that none was).
func (a access) explain(err error) error {
	if !errors.Is(err, transport.ErrAuthenticationRequired) && !strings.Contains(err.Error(), "unable to authenticate") {
		return err
	}
	if a.secret == "" {
		return fmt.Errorf("authentication failed: the repository needs credentials, named with spec.clientSecretName: %w", err)
	}
	return fmt.Errorf("authentication failed with clientSecretName %q: %w", a.secret, err)
}

// sshKeys is go-git's public-key auth with a bounded connect.
type sshKeys struct{ *gitssh.PublicKeys }

func (k sshKeys) ClientConfig() (*ssh.ClientConfig, error) {
	cfg, err := k.PublicKeys.ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = sshConnectTimeout
	return cfg, nil
}

// sshAuth is the secret's private key, for the URL's user (git by default), and a host key check
// against the secret's known_hosts: a secret without known_hosts is refused unless it says
// insecureIgnoreHostKey.
func (c *Cache) sshAuth(name string, sec *credentials.Secret, ep *transport.Endpoint) (transport.AuthMethod, error) {
	if len(sec.SSHPrivateKey) == 0 {
		return nil, fmt.Errorf("clientSecretName %q has no ssh-privatekey, which an SSH repository needs", name)
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	keys, err := gitssh.NewPublicKeys(user, sec.SSHPrivateKey, "")
	if err != nil {
		// Not wrapped: the parser's message is no business of a GitRepo's status.
		return nil, fmt.Errorf("clientSecretName %q: its ssh-privatekey does not parse", name)
	}
	addr := sshAddress(ep)
	switch {
	case sec.InsecureIgnoreHostKey:
		keys.HostKeyCallback = ssh.InsecureIgnoreHostKey() //nolint:gosec // the secret asked for it by name
	case len(sec.KnownHosts) == 0:
		return nil, fmt.Errorf("clientSecretName %q has no known_hosts, so the host key of %s cannot be checked: "+
			"add the host's known_hosts line (ssh-keyscan), or insecureIgnoreHostKey to skip the check", name, addr)
	default:
		db, err := c.knownHosts(sec.KnownHosts)
		if err != nil {
			return nil, fmt.Errorf("clientSecretName %q: known_hosts: %w", name, err)
		}
		keys.HostKeyCallback = checkHostKey(name, db.HostKeyCallback())
		// Offer only the key types known_hosts lists for the host: the server would otherwise pick one
		// it has and known_hosts lacks, and the check fail against a good server.
		keys.HostKeyAlgorithms = db.HostKeyAlgorithms(addr)
	}
	return sshKeys{keys}, nil
}

// sshAddress is the host:port go-git dials for an endpoint, ~/.ssh/config's Hostname and Port included.
func sshAddress(ep *transport.Endpoint) string {
	host, port := ep.Host, ep.Port
	if cfg := gitssh.DefaultSSHConfig; cfg != nil {
		if h := cfg.Get(ep.Host, "Hostname"); h != "" {
			host = h
			if p, err := strconv.Atoi(cfg.Get(ep.Host, "Port")); err == nil {
				port = p
			}
		}
	}
	if port <= 0 {
		port = gitssh.DefaultPort
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// knownHosts parses known_hosts once per content. x/crypto reads known_hosts from files only: the
// content goes through a temporary file, removed once read.
func (c *Cache) knownHosts(data []byte) (*knownhosts.HostKeyDB, error) {
	key := sha256.Sum256(data)
	c.hostKeysMu.Lock()
	defer c.hostKeysMu.Unlock()
	if db, ok := c.hostKeys[key]; ok {
		return db, nil
	}
	f, err := os.CreateTemp("", "flotilla-known-hosts-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	db, err := knownhosts.NewDB(f.Name())
	if err != nil {
		return nil, errors.New("does not parse")
	}
	if c.hostKeys == nil {
		c.hostKeys = map[[sha256.Size]byte]*knownhosts.HostKeyDB{}
	}
	c.hostKeys[key] = db
	return db, nil
}

// checkHostKey turns known_hosts' verdicts into messages naming the host and the secret.
func checkHostKey(secret string, cb ssh.HostKeyCallback) ssh.HostKeyCallback {
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := cb(host, remote, key)
		if err == nil {
			return nil
		}
		var keyErr *xknownhosts.KeyError
		var revoked *xknownhosts.RevokedError
		switch {
		case errors.As(err, &revoked):
			return fmt.Errorf("the host key of %s (%s) is revoked in the known_hosts of clientSecretName %q",
				host, ssh.FingerprintSHA256(key), secret)
		case errors.As(err, &keyErr) && len(keyErr.Want) > 0:
			return fmt.Errorf("host key mismatch for %s: it presented %s %s, which the known_hosts of clientSecretName %q does not list for it "+
				"(the host's key changed, or something is in between)", host, key.Type(), ssh.FingerprintSHA256(key), secret)
		case errors.As(err, &keyErr):
			return fmt.Errorf("host %s is not in the known_hosts of clientSecretName %q (it presented %s %s)",
				host, secret, key.Type(), ssh.FingerprintSHA256(key))
		}
		return err
	}
}
