package codec

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// fuzzKeyring is a rotated keyring: k2 encrypts, k1 still decrypts.
func fuzzKeyring(tb testing.TB) *Keyring {
	tb.Helper()
	k, err := ParseKeyring("keys.yaml", []byte("keys:\n- id: k2\n  key: "+key(2)+"\n- id: k1\n  key: "+key(1)+"\n"))
	require.NoError(tb, err)
	return k
}

// A payload's envelope is read from Temporal's history, which whoever reaches the server writes. Whatever
// its metadata and bytes, Decode passes a payload in clear through untouched (a strict codec refuses it),
// refuses an encrypted one it cannot open naming its key ID, and opens only what a key of the ring sealed:
// what it opens seals and opens again to the same payload.
func FuzzCodecDecode(f *testing.F) {
	c := New(fuzzKeyring(f))
	oldRing, err := ParseKeyring("old.yaml", []byte("keys:\n- id: k1\n  key: "+key(1)+"\n"))
	require.NoError(f, err)
	old := New(oldRing)
	in, err := converter.GetDefaultDataConverter().ToPayloads(map[string]string{"a": "b"}, "text", nil, []byte{0, 1, 2})
	require.NoError(f, err)
	for _, codec := range []*Codec{c, old} {
		sealed, err := codec.Encode(in.Payloads)
		require.NoError(f, err)
		for _, p := range sealed {
			id := string(p.Metadata[MetadataKeyID])
			f.Add(MetadataEncodingEncrypted, id, p.Data, false)
			f.Add(MetadataEncodingEncrypted, id, p.Data, true)
			tampered := bytes.Clone(p.Data)
			tampered[len(tampered)-1] ^= 1
			f.Add(MetadataEncodingEncrypted, id, tampered, false)
			f.Add(MetadataEncodingEncrypted, id, p.Data[:nonceSize+3], false)
			f.Add(MetadataEncodingEncrypted, map[string]string{"k1": "k2", "k2": "k1"}[id], p.Data, false)
		}
	}
	f.Add(MetadataEncodingEncrypted, "k3", []byte("whatever"), false)
	f.Add(MetadataEncodingEncrypted, "", []byte{}, false)
	f.Add("json/plain", "", []byte(`"hello"`), false)
	f.Add("json/plain", "", []byte(`"hello"`), true)
	f.Add("binary/null", "k1", []byte(nil), false)
	f.Add("", "", []byte("\x00"), true)
	f.Fuzz(func(t *testing.T, encoding, keyID string, data []byte, strict bool) {
		codec := c
		if strict {
			codec = c.Strict()
		}
		p := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encoding), MetadataKeyID: []byte(keyID)}, Data: data}
		out, err := codec.Decode([]*commonpb.Payload{p})
		if encoding != MetadataEncodingEncrypted {
			if strict {
				require.ErrorContains(t, err, "refusing a payload in clear")
				return
			}
			require.NoError(t, err)
			require.Same(t, p, out[0], "a payload in clear passes through untouched")
			return
		}
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("payload encrypted with key ID %q", keyID)), "%v", err)
			return
		}
		require.Contains(t, []string{"k1", "k2"}, keyID)
		again, err := codec.Encode(out)
		require.NoError(t, err)
		back, err := codec.Decode(again)
		require.NoError(t, err)
		require.True(t, proto.Equal(out[0], back[0]), "what opens seals and opens again to the same payload")
	})
}

// A payload sealed and opened is the payload, metadata and all; sealed, it shows nothing of what it holds
// but its key ID, and a single bit flipped, a byte cut off, or another key ID put on it is refused.
func FuzzCodecRoundTrip(f *testing.F) {
	f.Add("encoding", []byte("json/plain"), []byte(`{"cluster":"edge-1","kubeconfig":"plaintext-canary"}`), uint32(0))
	f.Add("encoding", []byte("binary/protobuf"), []byte{8, 1, 18, 3, 'a', 'b', 'c'}, uint32(17))
	f.Add("", []byte{}, []byte{}, uint32(1<<31))
	f.Add("messageType", []byte("temporal.api.common.v1.Payload"), bytes.Repeat([]byte{0xff}, 300), uint32(12))
	f.Fuzz(func(t *testing.T, metaKey string, metaValue, data []byte, at uint32) {
		c := New(fuzzKeyring(t))
		in := &commonpb.Payload{Metadata: map[string][]byte{metaKey: metaValue}, Data: data}
		sealed, err := c.Encode([]*commonpb.Payload{in})
		if !utf8.ValidString(metaKey) {
			require.Error(t, err, "protobuf map keys are UTF-8: such a payload was never made")
			return
		}
		require.NoError(t, err)
		s := sealed[0]
		require.Equal(t, map[string][]byte{converter.MetadataEncoding: []byte(MetadataEncodingEncrypted), MetadataKeyID: []byte("k2")}, s.Metadata)
		if len(data) >= 16 {
			require.False(t, bytes.Contains(s.Data, data), "the payload travels encrypted")
		}
		out, err := c.Decode(sealed)
		require.NoError(t, err)
		require.True(t, proto.Equal(in, out[0]), "a payload comes back as it was")

		flipped := proto.Clone(s).(*commonpb.Payload)
		flipped.Data[int(at)%len(flipped.Data)] ^= 1 << (at % 8)
		_, err = c.Decode([]*commonpb.Payload{flipped})
		require.EqualError(t, err, `payload encrypted with key ID "k2" does not decrypt: it was altered, or that ID names a different key now`)

		cut := proto.Clone(s).(*commonpb.Payload)
		cut.Data = cut.Data[:int(at)%len(cut.Data)]
		_, err = c.Decode([]*commonpb.Payload{cut})
		require.Error(t, err)

		relabelled := proto.Clone(s).(*commonpb.Payload)
		relabelled.Metadata[MetadataKeyID] = []byte("k1")
		_, err = c.Decode([]*commonpb.Payload{relabelled})
		require.EqualError(t, err, `payload encrypted with key ID "k1" does not decrypt: it was altered, or that ID names a different key now`)
	})
}

// yamlSummary is what a keyring error may say of a document it could not read.
var yamlSummary = regexp.MustCompile(`: not a keyring \(want .*\): (error at line \d+|an unknown field|malformed YAML)$`)

// A key file is an operator's, and a misedited one must not end up quoted in logs. Whatever it holds,
// ParseKeyring gives a ring whose first key encrypts and whose every key decrypts, or an error naming the
// file that quotes no key from it, and of a document it cannot read, only a line number.
func FuzzParseKeyring(f *testing.F) {
	for _, doc := range []string{
		"keys:\n- id: k1\n  key: " + key(1) + "\n",
		"keys:\n- id: 2026-11\n  key: " + key(2) + "\n- id: 7\n  key: " + key(1) + "\n",
		`{"keys":[{"id":"a","key":"` + key(3) + `"}]}`,
		"keys:\n- id: k1\n  key: " + key(1) + "\n- id: k1\n  key: " + key(2) + "\n",
		"keys:\n- id: k1\n  kye: " + key(1) + "\n",
		"keys:\n- id: k1\n  key: [" + key(1) + "]\n",
		"keys:\n- id: k1\n  key: c2l4dGVlbi1ieXRlLWtleQ==\n",
		"keys:\n- id: {a: b}\n  key: " + key(1) + "\n",
		"keys:\n- id: \"  \"\n  key: " + key(1) + "\n",
		"keys:\n- id: k1\n  key: " + key(1) + "\n  \"line 9: " + key(2) + "\": 1\n",
		"keys:\n  - id: k1\n   key: " + key(1) + "\n",
		"keys: []\n",
		"",
		"\t" + key(1),
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseKeyring("keys.yaml", data)
		if err != nil {
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "codec key file keys.yaml: "), "%v", err)
			if strings.Contains(msg, ": not a keyring") {
				require.Regexp(t, yamlSummary, msg)
			}
			for _, secret := range keyValues(data) {
				require.NotContains(t, msg, secret[:12], "a key ends up in the error")
			}
			return
		}
		ids := k.IDs()
		require.NotEmpty(t, ids)
		require.Equal(t, ids[0], k.Active())
		seen := map[string]bool{}
		for _, id := range ids {
			require.NotEmpty(t, id)
			require.Equal(t, strings.TrimSpace(id), id)
			require.False(t, seen[id], "an id is used once")
			seen[id] = true
		}
		c := New(k)
		sealed, err := c.Encode([]*commonpb.Payload{{Data: []byte("x")}})
		require.NoError(t, err)
		require.Equal(t, k.Active(), string(sealed[0].Metadata[MetadataKeyID]))
		_, err = c.Decode(sealed)
		require.NoError(t, err)
	})
}

// keyValues are the strings of at least 12 characters a document holds that are not ids: what a key may be.
func keyValues(data []byte) []string {
	var doc any
	if yaml.Unmarshal(data, &doc) != nil {
		return nil
	}
	var out []string
	var walk func(v any, underID bool)
	walk = func(v any, underID bool) {
		switch t := v.(type) {
		case map[string]any:
			for k, v := range t {
				walk(v, strings.EqualFold(k, "id"))
			}
		case []any:
			for _, v := range t {
				walk(v, underID)
			}
		case string:
			if t = strings.TrimSpace(t); !underID && len(t) >= 12 {
				out = append(out, t)
			}
		}
	}
	walk(doc, false)
	return out
}
