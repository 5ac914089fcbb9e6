package registry

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/tests/env/needs"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

func TestStartPushStop(t *testing.T) {
	needs.Binaries(t, "registry")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	r, err := Start(ctx, Options{Dir: dir, Username: "u", Password: "p4ssword", PIDFile: dir + "/registry.pid"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Stop() })

	p, err := r.Push(testchart.New("web", "1.0.0+build.1"), "charts")
	require.NoError(t, err)
	assert.Equal(t, r.Host+"/charts/web:1.0.0_build.1", p.Ref)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, p.Digest)

	// Nothing may hold the registry's password but the htpasswd hash: no credentials file was written.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, []string{"config.json", "registry.json"}, e.Name())
	}
	htpasswd, err := os.ReadFile(dir + "/htpasswd")
	require.NoError(t, err)
	assert.NotContains(t, string(htpasswd), "p4ssword")

	_, err = Start(ctx, Options{Dir: t.TempDir(), Username: "u", Password: "p", Port: func() int {
		_, port, _ := splitHostPort(r.Host)
		return port
	}()})
	// Its own CA is not the first registry's: Start cannot mistake the first one's answer for its own.
	require.Error(t, err, "a second registry on the same port exits, and Start says so")

	pid := r.PID()
	require.NoError(t, r.Stop())
	assert.Error(t, syscall.Kill(pid, 0), "the registry's process is gone")
	_, err = os.Stat(dir + "/registry.pid")
	assert.True(t, os.IsNotExist(err))
}
