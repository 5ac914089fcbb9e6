package temporalconn

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// jwt is an unsigned token with the given payload, shaped as Temporal Cloud's API keys are.
func jwt(payload string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"ES256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(payload)) + ".c2lnbmF0dXJl"
}

func TestAnAPIKeysExpiryIsReadOnlyFromAJWTThatCarriesIt(t *testing.T) {
	exp, ok := jwtExpiry(jwt(`{"sub":"flotilla","exp":1700000000}`))
	require.True(t, ok)
	require.Equal(t, time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC), exp)

	for name, key := range map[string]string{
		"an opaque key":      secretKey,
		"no exp claim":       jwt(`{"sub":"flotilla"}`),
		"a payload not JSON": jwt(`not json`),
		"an exp not a time":  jwt(`{"exp":"soon"}`),
		"two parts":          "abc.def",
	} {
		_, ok := jwtExpiry(key)
		require.False(t, ok, name)
	}
}

// A server refusing an expired key says only that it refused it; the error says the key expired and
// when, naming where the key came from and never the key.
func TestARefusedAPIKeyThatExpiredIsSaidToHaveExpired(t *testing.T) {
	clearEnv(t)
	p := newTestPKI(t)
	valid := jwt(`{"sub":"flotilla","exp":4102444800}`)
	addr := serve(t, p.serverTLS(t, false), &fakeFrontend{apiKey: valid})
	keyPath := filepath.Join(t.TempDir(), "api-key")
	s := Settings{Address: addr, ServerCAFile: p.caFile, APIKeyFile: keyPath}

	expired := jwt(`{"sub":"flotilla","exp":1700000000}`)
	require.NoError(t, os.WriteFile(keyPath, []byte(expired+"\n"), 0o600))
	err := dial(t, s)
	t.Log(err)
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.Contains(t, err.Error(), "the API key in --api-key-file "+keyPath+" expired at 2023-11-14T22:13:20Z (")
	require.Contains(t, err.Error(), "ago): issue a new one")
	require.NotContains(t, err.Error(), expired)

	// A key refused before its expiry is not called expired.
	require.NoError(t, os.WriteFile(keyPath, []byte(jwt(`{"sub":"other","exp":4102444800}`)+"\n"), 0o600))
	err = dial(t, s)
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.NotContains(t, err.Error(), "expired at")
	require.Contains(t, err.Error(), "it may be wrong, expired or revoked")

	require.NoError(t, os.WriteFile(keyPath, []byte(valid+"\n"), 0o600))
	require.NoError(t, dial(t, s))

	// From the environment too.
	s.APIKeyFile = ""
	t.Setenv(EnvAPIKey, expired)
	err = dial(t, s)
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.Contains(t, err.Error(), "the API key in "+EnvAPIKey+" expired at 2023-11-14T22:13:20Z")
	require.NotContains(t, err.Error(), expired)
}
