package main

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// The image's healthcheck passes on 2xx only, and says what it got otherwise.
func TestProbePassesOnlyOnSuccess(t *testing.T) {
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not polling Temporal yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	probe := func() error {
		root := newRoot()
		root.SetArgs([]string{"probe", srv.URL + "/healthz"})
		return root.Execute()
	}
	err := probe()
	require.ErrorContains(t, err, "503 Service Unavailable: not polling Temporal yet")
	ready.Store(true)
	require.NoError(t, probe())
}
