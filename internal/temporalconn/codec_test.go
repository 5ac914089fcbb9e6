package temporalconn

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/flotilla-gitops/flotilla/internal/codec"
)

// --codec-key-file (or its variable) gives the client a data converter that encrypts; without it the
// SDK's default applies, and a bad file stops the process at start naming the flag, the file and entry.
func TestACodecKeyFileMakesTheClientEncryptPayloads(t *testing.T) {
	for name, parse := range map[string]func(*testing.T, ...string) (Settings, error){"flag": parseStd, "pflag": parsePosix} {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, codec.KeySize))
			f := filepath.Join(t.TempDir(), "keys.yaml")
			require.NoError(t, os.WriteFile(f, []byte("keys:\n- id: k1\n  key: "+key+"\n"), 0o600))

			s, err := parse(t)
			require.NoError(t, err)
			opts, err := s.ClientOptions(nil)
			require.NoError(t, err)
			p, err := opts.DataConverter.ToPayload("in clear")
			require.NoError(t, err)
			require.Equal(t, "json/plain", string(p.Metadata[converter.MetadataEncoding]))

			t.Setenv(codec.EnvKeyFile, f)
			s, err = parse(t)
			require.NoError(t, err)
			require.Equal(t, f, s.CodecKeyFile)
			require.Contains(t, s.String(), "payloads encrypted with keys from "+f)
			opts, err = s.ClientOptions(nil)
			require.NoError(t, err)
			p, err = opts.DataConverter.ToPayload("plaintext-canary")
			require.NoError(t, err)
			require.Equal(t, codec.MetadataEncodingEncrypted, string(p.Metadata[converter.MetadataEncoding]))
			require.NotContains(t, string(p.Data), "plaintext-canary")

			bad := filepath.Join(t.TempDir(), "bad.yaml")
			require.NoError(t, os.WriteFile(bad, []byte("keys:\n- id: short\n  key: "+key[:20]+"\n"), 0o600))
			s, err = parse(t, "--codec-key-file", bad)
			require.NoError(t, err)
			_, err = s.ClientOptions(nil)
			require.ErrorContains(t, err, "--codec-key-file: codec key file "+bad+`: key 1 (id "short")`)
			require.NotContains(t, err.Error(), key[:20])
		})
	}
}

// --require-encrypted-payloads refuses payloads in clear, and needs the keyring that reads the others.
func TestRequiringEncryptedPayloads(t *testing.T) {
	clearEnv(t)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, codec.KeySize))
	f := filepath.Join(t.TempDir(), "keys.yaml")
	require.NoError(t, os.WriteFile(f, []byte("keys:\n- id: k1\n  key: "+key+"\n"), 0o600))

	s, err := parseStd(t, "--require-encrypted-payloads")
	require.NoError(t, err)
	_, err = s.ClientOptions(nil)
	require.EqualError(t, err, "--require-encrypted-payloads (or FLOTILLA_REQUIRE_ENCRYPTED_PAYLOADS) needs --codec-key-file: nothing could be read")

	t.Setenv(codec.EnvRequireEncrypted, "true")
	s, err = parseStd(t, "--codec-key-file", f)
	require.NoError(t, err)
	opts, err := s.ClientOptions(nil)
	require.NoError(t, err)
	clear, err := converter.GetDefaultDataConverter().ToPayload("queued without the keyring")
	require.NoError(t, err)
	var v string
	require.ErrorContains(t, opts.DataConverter.FromPayload(clear, &v), "refusing a payload in clear")
	sealed, err := opts.DataConverter.ToPayload("queued by the installation")
	require.NoError(t, err)
	require.NoError(t, opts.DataConverter.FromPayload(sealed, &v))
	require.Equal(t, "queued by the installation", v)
}
