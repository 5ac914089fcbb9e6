package credentials

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Secret is one named credential of the store. Its fields are Fleet's keys of a basic-auth or ssh-auth
// Secret plus the TLS settings of a Helm secret; which ones a caller uses depends on what it connects to
// (git over HTTPS or SSH, a Helm repository). Printing a Secret, whatever the verb, and encoding it as JSON
// show which fields are set and never a value, so an accidental %v or log field cannot leak one.
type Secret struct {
	// Username and Password are HTTP basic auth; a password without a username is a token.
	Username, Password []byte
	// SSHPrivateKey is an unencrypted private key in PEM or OpenSSH form (Fleet's ssh-privatekey).
	SSHPrivateKey []byte
	// KnownHosts are the SSH host keys accepted, in OpenSSH known_hosts form (Fleet's known_hosts).
	KnownHosts []byte
	// CABundle is PEM certificates trusted besides the system's for HTTPS (Fleet's cacerts).
	CABundle []byte
	// InsecureSkipTLSVerify turns off certificate verification for HTTPS (Fleet's insecureSkipVerify).
	InsecureSkipTLSVerify bool
	// InsecureIgnoreHostKey accepts any SSH host key: without it, SSH needs KnownHosts.
	InsecureIgnoreHostKey bool
	// Workspaces are the workspaces whose GitRepos may name the secret ("*": every one). None is
	// fleet-default alone, as a Fleet GitRepo uses only Secrets of its own namespace and the store's
	// unscoped secrets were fleet-default's before workspaces. Not secret.
	Workspaces []string
	// URLPrefixes, when set, are the only URLs the secret is sent to (as Fleet's helmRepoURLRegex, by
	// prefix). Not secret.
	URLPrefixes []string
}

// set lists the keys a secret has, by their folder names.
func (s Secret) set() []string {
	var keys []string
	for _, f := range []struct {
		key string
		on  bool
	}{
		{keyUsername, len(s.Username) > 0}, {keyPassword, len(s.Password) > 0},
		{keySSHPrivateKey, len(s.SSHPrivateKey) > 0}, {keyKnownHosts, len(s.KnownHosts) > 0},
		{keyCACerts, len(s.CABundle) > 0}, {keyInsecureSkipVerify, s.InsecureSkipTLSVerify},
		{keyInsecureIgnoreHostKey, s.InsecureIgnoreHostKey},
	} {
		if f.on {
			keys = append(keys, f.key)
		}
	}
	return keys
}

// String names the keys the secret has, never their values.
func (s Secret) String() string {
	return "credentials.Secret{" + strings.Join(s.set(), " ") + "}"
}

// GoString is String: %#v shows no value either.
func (s Secret) GoString() string { return s.String() }

// Format prints String for every verb (%v, %+v, %#v, %s, %q, %x...).
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s.String())
		return
	}
	fmt.Fprint(f, s.String())
}

// MarshalJSON encodes String: a Secret inside a logged or encoded structure shows no value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

func (s Secret) clone() *Secret {
	c := s
	for _, b := range []*[]byte{&c.Username, &c.Password, &c.SSHPrivateKey, &c.KnownHosts, &c.CABundle} {
		*b = append([]byte(nil), (*b)...)
	}
	c.Workspaces = append([]string(nil), s.Workspaces...)
	c.URLPrefixes = append([]string(nil), s.URLPrefixes...)
	return &c
}
