// Package agentkey binds what the management side sends an agent to that agent's cluster (ADR 26). An
// installation holds one secret key, on its workers only; each agent-mode cluster's key is derived from it
// and given to that cluster's agent alone, at install. The management side seals every package it serves
// to the cluster's key, so another agent (or anyone reading the Temporal namespace, where the bytes travel
// as workflow results) cannot read it; and it grants every rendering it prepares, so an agent applies only
// what the management side decided for it, never a task another principal of the namespace queued.
package agentkey

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// Size is the length of an installation key and of a cluster key, in bytes.
const Size = 32

// Key is an installation's or a cluster's key. Printing it shows nothing of it.
type Key struct{ b []byte }

func (k Key) String() string   { return "agentkey.Key{…}" }
func (k Key) GoString() string { return k.String() }

// IsZero reports whether k holds no key (an installation or an agent without one).
func (k Key) IsZero() bool { return len(k.b) == 0 }

// Encode is the key as its file and environment variable hold it: base64.
func (k Key) Encode() string { return base64.StdEncoding.EncodeToString(k.b) }

// Generate makes a new installation key.
func Generate() (Key, error) {
	b := make([]byte, Size)
	if _, err := rand.Read(b); err != nil {
		return Key{}, err
	}
	return Key{b}, nil
}

// Parse reads a key as Encode writes it; what names the key's source in errors (never its value).
func Parse(text, what string) (Key, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil || len(b) != Size {
		return Key{}, fmt.Errorf("%s: not a key (base64 of %d bytes, as `flotilla installation-key` writes one)", what, Size)
	}
	return Key{b}, nil
}

// Load reads a key from a file.
func Load(path string) (Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("key file: %w", err)
	}
	return Parse(string(data), "key file "+path)
}

// ForCluster is the key of a cluster of workspace, derived from the installation key: every worker derives
// the same, and a cluster's key says nothing of another's or of the installation's.
func (k Key) ForCluster(workspace, cluster string) Key {
	m := hmac.New(sha256.New, k.b)
	m.Write([]byte("flotilla agent key v1\x00" + fleet.Workspace(workspace) + "\x00" + cluster))
	return Key{m.Sum(nil)}
}

// Grant is a MAC of message under k: proof that the holder of the cluster's key (the management side) made
// it. what is a fixed label that keeps a grant of one kind from passing for another.
func (k Key) Grant(what string, message []byte) string {
	m := hmac.New(sha256.New, k.b)
	m.Write([]byte(what + "\x00"))
	m.Write(message)
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil))
}

// ErrNotGranted is a grant that is missing or does not match.
var ErrNotGranted = errors.New("not granted by the management side")

// Verify checks grant against what and message in constant time.
func (k Key) Verify(what string, message []byte, grant string) error {
	if grant == "" {
		return fmt.Errorf("%w: no grant (is the management side run without --installation-key-file?)", ErrNotGranted)
	}
	if !hmac.Equal([]byte(k.Grant(what, message)), []byte(grant)) {
		return fmt.Errorf("%w: the grant does not match", ErrNotGranted)
	}
	return nil
}

// Seal encrypts plaintext under k (AES-256-GCM, a random nonce first), bound to aad.
func (k Key) Seal(aad, plaintext []byte) ([]byte, error) {
	gcm, err := k.gcm()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return gcm.Seal(nonce, nonce, plaintext, aad), nil
}

// ErrNotSealed is sealed data that does not open under the key and aad: sealed for another cluster, or
// changed on the way.
var ErrNotSealed = errors.New("not sealed for this cluster")

// Open decrypts what Seal made with the same key and aad.
func (k Key) Open(aad, sealed []byte) ([]byte, error) {
	gcm, err := k.gcm()
	if err != nil {
		return nil, err
	}
	if len(sealed) < gcm.NonceSize()+gcm.Overhead() {
		return nil, ErrNotSealed
	}
	plain, err := gcm.Open(nil, sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():], aad)
	if err != nil {
		return nil, ErrNotSealed
	}
	return plain, nil
}

func (k Key) gcm() (cipher.AEAD, error) {
	if len(k.b) != Size {
		return nil, errors.New("agentkey: no key")
	}
	block, err := aes.NewCipher(k.b)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
