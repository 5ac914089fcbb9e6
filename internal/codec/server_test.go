package codec

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

func post(t *testing.T, url, body string, header map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data), resp.Header
}

func TestTheServerDecodesForTheTokenAndTheOriginsGiven(t *testing.T) {
	c := New(keyring(t, "k1", key(1)))
	enc, err := c.Encode(payloads(t, "plaintext-canary-7c1f"))
	require.NoError(t, err)
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: enc})
	require.NoError(t, err)
	srv := httptest.NewServer(Handler(c, ServerOptions{CORSOrigins: []string{"http://localhost:8233"}, AuthToken: "let-me-in"}))
	defer srv.Close()

	code, _, _ := post(t, srv.URL+"/decode", string(body), nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _, _ = post(t, srv.URL+"/decode", string(body), map[string]string{"Authorization": "Bearer wrong"})
	assert.Equal(t, http.StatusUnauthorized, code)

	code, out, h := post(t, srv.URL+"/decode", string(body), map[string]string{"Authorization": "Bearer let-me-in", "Origin": "http://localhost:8233", "X-Namespace": "default"})
	require.Equal(t, http.StatusOK, code, out)
	assert.Equal(t, "http://localhost:8233", h.Get("Access-Control-Allow-Origin"))
	var dec commonpb.Payloads
	require.NoError(t, protojson.Unmarshal([]byte(out), &dec))
	assert.Equal(t, `"plaintext-canary-7c1f"`, string(dec.Payloads[0].Data))

	_, _, h = post(t, srv.URL+"/decode", string(body), map[string]string{"Authorization": "Bearer let-me-in", "Origin": "http://evil.example"})
	assert.Empty(t, h.Get("Access-Control-Allow-Origin"))

	req, err := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://localhost:8233")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "X-Namespace")
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
}
