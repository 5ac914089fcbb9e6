package codec

import (
	"crypto/rand"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Metadata of an encrypted payload. The encoding is what the Temporal Web UI and CLI show for a payload
// they cannot decode, so it says plainly what it is.
const (
	MetadataEncodingEncrypted = "binary/encrypted"
	MetadataKeyID             = "encryption-key-id"
)

const nonceSize = 12 // GCM's standard nonce; random, so a key must not seal anywhere near 2^32 payloads

// Codec is a converter.PayloadCodec that seals each payload, metadata and all, with the keyring's active
// key, and opens a payload with whichever key its metadata names.
type Codec struct {
	keys *Keyring
	// strict refuses payloads in clear (Strict).
	strict bool
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New is the codec of k.
func New(k *Keyring) *Codec { return &Codec{keys: k} }

// Load reads a keyring file and returns its codec.
func Load(path string) (*Codec, error) {
	k, err := LoadKeyring(path)
	if err != nil {
		return nil, err
	}
	return New(k), nil
}

// Strict is c refusing every payload it did not encrypt: a process that runs only what its installation
// sent (an agent, ADR 26) reads nothing queued by a principal of the namespace who lacks the keyring.
func (c *Codec) Strict() *Codec {
	strict := *c
	strict.strict = true
	return &strict
}

// Keyring is the codec's keys.
func (c *Codec) Keyring() *Keyring { return c.keys }

// DataConverter is the SDK's default converter with c encoding what it produces: what a client of
// Flotilla's must use to read and write its payloads.
func (c *Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// Encode seals each payload. The original's metadata (its JSON or proto encoding) goes inside, so the
// server sees only that a payload is encrypted and with which key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id := c.keys.active
	aead := c.keys.aeads[id]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encrypting payload: %w", err)
		}
		sealed := make([]byte, nonceSize, nonceSize+len(plain)+aead.Overhead())
		if _, err := rand.Read(sealed); err != nil {
			return nil, fmt.Errorf("encrypting payload: no randomness for a nonce: %w", err)
		}
		// The key ID is authenticated data: a payload relabelled with another ID fails to open rather than
		// being tried with the wrong key.
		sealed = aead.Seal(sealed, sealed[:nonceSize], plain, []byte(id))
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(MetadataEncodingEncrypted),
				MetadataKeyID:              []byte(id),
			},
			Data: sealed,
		}
	}
	return out, nil
}

// Decode opens each encrypted payload and passes any other through as it is: histories written before
// encryption was turned on stay readable.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != MetadataEncodingEncrypted {
			if c.strict {
				return nil, fmt.Errorf("refusing a payload in clear (encoding %q): this process takes only payloads its keyring encrypted "+
					"(--require-encrypted-payloads)", string(p.GetMetadata()[converter.MetadataEncoding]))
			}
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		aead, ok := c.keys.aeads[id]
		if !ok {
			return nil, fmt.Errorf("payload encrypted with key ID %q, which is not in the codec key file (it has %v): add that key back to the file to read it", id, c.keys.ids)
		}
		data := p.GetData()
		if len(data) < nonceSize+aead.Overhead() {
			return nil, fmt.Errorf("payload encrypted with key ID %q is truncated (%d bytes)", id, len(data))
		}
		plain, err := aead.Open(nil, data[:nonceSize], data[nonceSize:], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("payload encrypted with key ID %q does not decrypt: it was altered, or that ID names a different key now", id)
		}
		var orig commonpb.Payload
		if err := proto.Unmarshal(plain, &orig); err != nil {
			return nil, fmt.Errorf("payload encrypted with key ID %q: decrypted, but not a payload: %w", id, err)
		}
		out[i] = &orig
	}
	return out, nil
}

// keyless is the codec of a client given no key file: it writes payloads in clear as before, and meeting
// an encrypted payload says which setting is missing instead of the SDK's "encoding is not supported".
type keyless struct{}

// Keyless is the PayloadCodec for a client without --codec-key-file.
func Keyless() converter.PayloadCodec { return keyless{} }

// KeylessDataConverter is the SDK's default converter with Keyless decoding.
func KeylessDataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), keyless{})
}

func (keyless) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return payloads, nil
}

func (keyless) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	for _, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) == MetadataEncodingEncrypted {
			return nil, fmt.Errorf("payload encrypted with key ID %q, and no key file was given: give --codec-key-file (env %s) with the installation's keyring",
				string(p.GetMetadata()[MetadataKeyID]), EnvKeyFile)
		}
	}
	return payloads, nil
}
