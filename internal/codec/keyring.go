// Package codec encrypts what Flotilla sends through Temporal (workflow and activity inputs and results,
// memos, signals, queries) with AES-256-GCM, so the server and whoever reads its database see ciphertext.
// Keys come from a keyring file; the first key encrypts and every key decrypts, which is how keys rotate.
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// EnvKeyFile is the environment variable that --codec-key-file defaults from.
const EnvKeyFile = "FLOTILLA_CODEC_KEY_FILE"

// EnvRequireEncrypted turns on Codec.Strict in every binary (--require-encrypted-payloads).
const EnvRequireEncrypted = "FLOTILLA_REQUIRE_ENCRYPTED_PAYLOADS"

// KeySize is AES-256's key length in bytes.
const KeySize = 32

// keyringFile is the file's format:
//
//	keys:
//	- id: 2026-11
//	  key: <32 random bytes, base64>
//	- id: 2026-05
//	  key: ...
type keyringFile struct {
	Keys []struct {
		ID  keyID  `json:"id"`
		Key string `json:"key"`
	} `json:"keys"`
}

// keyID takes a number as its text, since YAML reads an ID such as 2026 or 1 as one.
type keyID string

func (k *keyID) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*k = keyID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return errors.New("an id must be a string or a number")
	}
	*k = keyID(n.String())
	return nil
}

// Keyring is the keys of one file: Active encrypts, every key decrypts.
type Keyring struct {
	active string
	ids    []string
	aeads  map[string]cipher.AEAD
}

// LoadKeyring reads a keyring file. Errors name the file and the entry at fault, never a key.
func LoadKeyring(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("codec key file: %w", err)
	}
	return ParseKeyring(path, data)
}

// ParseKeyring reads a keyring from data; name is the file it came from, for errors.
func ParseKeyring(name string, data []byte) (*Keyring, error) {
	var f keyringFile
	// Strict, so a misspelt field is an error rather than a key silently missing from the ring. The
	// parser's own message may quote the document, hence the generic wording.
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("codec key file %s: not a keyring (want `keys:` with a list of `id:` and `key:`): %s", name, redactedYAMLError(err))
	}
	if len(f.Keys) == 0 {
		return nil, fmt.Errorf("codec key file %s: no keys; add one under `keys:` as `- id: NAME` and `key: $(head -c32 /dev/urandom | base64)`", name)
	}
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	for i, e := range f.Keys {
		id := strings.TrimSpace(string(e.ID))
		where := fmt.Sprintf("codec key file %s: key %d", name, i+1)
		if id == "" {
			return nil, fmt.Errorf("%s: no id", where)
		}
		where += fmt.Sprintf(" (id %q)", id)
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("%s: the id is used twice; each key needs its own, since payloads name the key that encrypted them", where)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(e.Key))
		if err != nil {
			// The decoder's error quotes an offset only, but say nothing of the value all the same.
			return nil, fmt.Errorf("%s: key is not standard base64", where)
		}
		if len(raw) != KeySize {
			return nil, fmt.Errorf("%s: key is %d bytes, AES-256 wants %d (head -c%d /dev/urandom | base64)", where, len(raw), KeySize, KeySize)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		k.aeads[id] = aead
		k.ids = append(k.ids, id)
	}
	k.active = k.ids[0]
	return k, nil
}

var yamlLine = regexp.MustCompile(`line [0-9]+`)

// redactedYAMLError keeps the line number of a YAML error and drops the rest, which can quote the
// document, keys and all.
func redactedYAMLError(err error) string {
	msg := err.Error()
	// Digits only: a field's name is quoted too, and "line <a key pasted as a field>:" is no line number.
	if line := yamlLine.FindString(msg); line != "" {
		return "error at " + line
	}
	if strings.Contains(msg, "unknown field") {
		return "an unknown field"
	}
	return "malformed YAML"
}

// Active is the ID of the key that encrypts.
func (k *Keyring) Active() string { return k.active }

// IDs are every key's ID, the active one first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }
