package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/internal/codec"
)

// The codec server decrypts for anyone who reaches it, so it will not listen beyond loopback without a
// token, and it needs the keys to start at all.
func TestTheCodecServerRefusesToStartOpenOrWithoutKeys(t *testing.T) {
	t.Setenv(codec.EnvKeyFile, "")
	_, _, err := flotilla(t, "codec-server")
	require.EqualError(t, err, "codec-server needs --codec-key-file (env FLOTILLA_CODEC_KEY_FILE)")

	f := filepath.Join(t.TempDir(), "keys.yaml")
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, codec.KeySize))
	require.NoError(t, os.WriteFile(f, []byte("keys:\n- id: k1\n  key: "+key+"\n"), 0o600))
	_, _, err = flotilla(t, "codec-server", "--codec-key-file", f, "--listen", "0.0.0.0:0")
	require.ErrorContains(t, err, "--listen 0.0.0.0:0 is not a loopback address")
	_, _, err = flotilla(t, "codec-server", "--codec-key-file", f, "--cors-origin", "localhost:8233")
	require.ErrorContains(t, err, `--cors-origin "localhost:8233": want the Web UI's origin`)
}
