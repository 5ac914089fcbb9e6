package chartrepo

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

func TestServer(t *testing.T) {
	s, err := Start(Options{Username: "u", Password: "p"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: (&testpki.PKI{CAPEM: s.CAPEM}).Pool()}}}
	get := func(path, user, pass string) (int, []byte) {
		req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, body
	}

	for _, v := range []string{"1.0.0", "1.1.0"} {
		_, err := s.Publish(testchart.New("web", v))
		require.NoError(t, err)
	}
	status, body := get("/index.yaml", "u", "p")
	require.Equal(t, http.StatusOK, status)
	var index repo.IndexFile
	require.NoError(t, yaml.Unmarshal(body, &index))
	require.Len(t, index.Entries["web"], 2)
	assert.Equal(t, "1.1.0", index.Entries["web"][0].Version)
	assert.Equal(t, []string{"web-1.1.0.tgz"}, index.Entries["web"][0].URLs)
	p, ok := s.Published("/web-1.1.0.tgz")
	require.True(t, ok)
	assert.Equal(t, p.Digest, "sha256:"+index.Entries["web"][0].Digest)

	status, archive := get("/web-1.1.0.tgz", "u", "p")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, p.Data, archive)
	assert.Equal(t, 1, s.Gets("/web-1.1.0.tgz"))
	assert.Equal(t, 1, s.Gets("/index.yaml"))

	status, _ = get("/index.yaml", "u", "wrong")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = get("/index.yaml", "", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = get("/nothing.tgz", "u", "p")
	assert.Equal(t, http.StatusNotFound, status)

	s.Fail(http.StatusBadGateway)
	status, _ = get("/index.yaml", "u", "p")
	assert.Equal(t, http.StatusBadGateway, status)
	s.Fail(0)

	require.NoError(t, s.Down())
	_, err = client.Get(s.URL + "/index.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connection refused")
	require.NoError(t, s.Up())
	status, _ = get("/index.yaml", "u", "p")
	assert.Equal(t, http.StatusOK, status)
}
