package codec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func key(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, KeySize)) }

func keyring(t *testing.T, entries ...string) *Keyring {
	t.Helper()
	var doc strings.Builder
	doc.WriteString("keys:\n")
	for i := 0; i < len(entries); i += 2 {
		fmt.Fprintf(&doc, "- id: %s\n  key: %s\n", entries[i], entries[i+1])
	}
	k, err := ParseKeyring("keys.yaml", []byte(doc.String()))
	require.NoError(t, err)
	return k
}

func payloads(t *testing.T, values ...any) []*commonpb.Payload {
	t.Helper()
	ps, err := converter.GetDefaultDataConverter().ToPayloads(values...)
	require.NoError(t, err)
	return ps.Payloads
}

func TestPayloadsComeBackAsTheyWereAndTravelEncrypted(t *testing.T) {
	c := New(keyring(t, "k1", key(1)))
	in := payloads(t, map[string]string{"marker": "plaintext-canary-7c1f"}, "second", nil)
	enc, err := c.Encode(in)
	require.NoError(t, err)
	require.Len(t, enc, 3)
	for _, p := range enc {
		assert.Equal(t, MetadataEncodingEncrypted, string(p.Metadata[converter.MetadataEncoding]))
		assert.Equal(t, "k1", string(p.Metadata[MetadataKeyID]))
		assert.NotContains(t, string(p.Data), "plaintext-canary")
		assert.NotContains(t, string(p.Data), "json/plain", "the original's metadata is sealed too")
	}
	dec, err := c.Decode(enc)
	require.NoError(t, err)
	for i := range in {
		assert.Equal(t, in[i].Metadata, dec[i].Metadata)
		assert.Equal(t, in[i].Data, dec[i].Data)
	}

	again, err := c.Encode(in[:1])
	require.NoError(t, err)
	assert.NotEqual(t, enc[0].Data, again[0].Data, "a fresh nonce each time")
}

func TestTheDataConverterWritesCiphertextAndReadsItBack(t *testing.T) {
	dc := New(keyring(t, "k1", key(1))).DataConverter()
	p, err := dc.ToPayload("plaintext-canary-7c1f")
	require.NoError(t, err)
	assert.NotContains(t, string(p.Data), "plaintext-canary")
	var s string
	require.NoError(t, dc.FromPayload(p, &s))
	assert.Equal(t, "plaintext-canary-7c1f", s)
}

func TestAfterRotationNewPayloadsUseTheNewKeyAndOldOnesStillOpen(t *testing.T) {
	old := New(keyring(t, "2026-05", key(1)))
	before, err := old.Encode(payloads(t, "before"))
	require.NoError(t, err)

	rotated := New(keyring(t, "2026-11", key(2), "2026-05", key(1)))
	after, err := rotated.Encode(payloads(t, "after"))
	require.NoError(t, err)
	assert.Equal(t, "2026-11", string(after[0].Metadata[MetadataKeyID]))

	dec, err := rotated.Decode(append(before, after...))
	require.NoError(t, err)
	var a, b string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(dec[0], &a))
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(dec[1], &b))
	assert.Equal(t, []string{"before", "after"}, []string{a, b})

	_, err = old.Decode(after)
	require.Error(t, err, "the old ring does not know the new key")
	assert.Contains(t, err.Error(), `key ID "2026-11"`)
	assert.NotContains(t, err.Error(), key(1))
}

func TestPlainPayloadsPassThroughDecode(t *testing.T) {
	in := payloads(t, "written before encryption")
	dec, err := New(keyring(t, "k1", key(1))).Decode(in)
	require.NoError(t, err)
	assert.Same(t, in[0], dec[0])
}

func TestAlteredOrRelabelledCiphertextIsRefused(t *testing.T) {
	c := New(keyring(t, "a", key(1), "b", key(2)))
	enc, err := c.Encode(payloads(t, "secret"))
	require.NoError(t, err)

	flipped := &commonpb.Payload{Metadata: enc[0].Metadata, Data: append([]byte(nil), enc[0].Data...)}
	flipped.Data[len(flipped.Data)-1] ^= 1
	_, err = c.Decode([]*commonpb.Payload{flipped})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `key ID "a" does not decrypt`)

	relabelled := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(MetadataEncodingEncrypted), MetadataKeyID: []byte("b")}, Data: enc[0].Data}
	_, err = c.Decode([]*commonpb.Payload{relabelled})
	require.Error(t, err)

	_, err = c.Decode([]*commonpb.Payload{{Metadata: enc[0].Metadata, Data: enc[0].Data[:5]}})
	require.ErrorContains(t, err, "truncated")
}

func TestBadKeyFilesNameTheFileAndEntryButNeverTheKey(t *testing.T) {
	short := base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key"))
	for _, tc := range []struct{ name, doc, want string }{
		{"short key", "keys:\n- id: k1\n  key: " + key(1) + "\n- id: k2\n  key: " + short + "\n", `keys.yaml: key 2 (id "k2"): key is 16 bytes, AES-256 wants 32`},
		{"not base64", "keys:\n- id: k1\n  key: not*base64!" + key(3) + "\n", `keys.yaml: key 1 (id "k1"): key is not standard base64`},
		{"duplicate id", "keys:\n- id: k1\n  key: " + key(1) + "\n- id: k1\n  key: " + key(2) + "\n", `key 2 (id "k1"): the id is used twice`},
		{"no id", "keys:\n- key: " + key(1) + "\n", `keys.yaml: key 1: no id`},
		{"no keys", "keys: []\n", `keys.yaml: no keys`},
		{"misspelt field", "keys:\n- id: k1\n  kye: " + key(1) + "\n", `keys.yaml: not a keyring`},
		{"key of the wrong type", "keys:\n- id: k1\n  key: [" + key(1) + "]\n", `keys.yaml: not a keyring`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseKeyring("keys.yaml", []byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			for _, secret := range []string{key(1), key(2), key(3), short, "sixteen"} {
				assert.NotContains(t, err.Error(), secret)
				assert.NotContains(t, err.Error(), secret[:min(12, len(secret))])
			}
		})
	}
}

func TestLoadReadsTheFileAndTheFirstKeyEncrypts(t *testing.T) {
	f := filepath.Join(t.TempDir(), "keys.yaml")
	require.NoError(t, os.WriteFile(f, []byte("keys:\n- id: new\n  key: "+key(2)+"\n- id: old\n  key: "+key(1)+"\n"), 0o600))
	c, err := Load(f)
	require.NoError(t, err)
	assert.Equal(t, "new", c.Keyring().Active())
	assert.Equal(t, []string{"new", "old"}, c.Keyring().IDs())

	_, err = Load(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "missing.yaml")
}

func TestAClientWithoutKeysSaysAKeyFileIsMissing(t *testing.T) {
	enc, err := New(keyring(t, "k1", key(1))).Encode(payloads(t, "secret"))
	require.NoError(t, err)
	var s string
	err = KeylessDataConverter().FromPayload(enc[0], &s)
	require.ErrorContains(t, err, `payload encrypted with key ID "k1", and no key file was given: give --codec-key-file`)

	p, err := KeylessDataConverter().ToPayload("clear")
	require.NoError(t, err)
	require.Equal(t, "json/plain", string(p.Metadata[converter.MetadataEncoding]))
}

func TestAnIDMayBeADateOrANumber(t *testing.T) {
	k, err := ParseKeyring("keys.yaml", []byte("keys:\n- id: 2026-11\n  key: "+key(1)+"\n- id: 7\n  key: "+key(2)+"\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"2026-11", "7"}, k.IDs())
}

// A strict codec reads only what its keyring encrypted: a payload in clear, as anyone without the keyring
// would queue it, is refused unread; what it encrypted reads back.
func TestAStrictCodecRefusesPayloadsInClear(t *testing.T) {
	c := New(keyring(t, "k1", key(1)))
	strict := c.Strict()
	clear, err := converter.GetDefaultDataConverter().ToPayloads("apply everything")
	require.NoError(t, err)
	_, err = strict.Decode(clear.Payloads)
	require.ErrorContains(t, err, `refusing a payload in clear (encoding "json/plain")`)
	_, err = c.Decode(clear.Payloads)
	require.NoError(t, err, "the default codec passes old payloads through")

	sealed, err := strict.Encode(clear.Payloads)
	require.NoError(t, err)
	opened, err := strict.Decode(sealed)
	require.NoError(t, err)
	var s string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(&commonpb.Payloads{Payloads: opened}, &s))
	require.Equal(t, "apply everything", s)
}
