package tempdev

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/flotilla-gitops/flotilla/tests/env/needs"
)

// Start returns only when everything it started answers: right after it, the Web UI's API (which the
// browser and the tests call) answers 200, not the 503 of a UI whose frontend connection is in back-off.
func TestStartReturnsWhenTheWebUIAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Bin: needs.Binary(t, "temporal"), Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop() })

	resp, err := http.Get(s.UIAddress() + "/api/v1/namespaces/default/workflows")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// A server that dies while starting (a port it was given was taken meanwhile) is started again on new
// ports, rather than failing the test or benchmark that asked for it.
func TestAServerThatDiesWhileStartingIsStartedAgainOnNewPorts(t *testing.T) {
	dir := t.TempDir()
	// The first start exits at once, as a server whose port was taken does; later ones are the real server.
	wrapper := filepath.Join(dir, "temporal-once-broken")
	script := fmt.Sprintf("#!/bin/sh\nif [ ! -e %[1]q ]; then : > %[1]q; echo 'bind: address already in use' >&2; exit 1; fi\nexec %[2]q \"$@\"\n",
		filepath.Join(dir, "failed-once"), needs.Binary(t, "temporal"))
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Bin: wrapper, Dir: filepath.Join(dir, "server"), Headless: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop() })
	require.FileExists(t, filepath.Join(dir, "failed-once"), "the first start failed")
	require.NoError(t, s.ping(ctx), "the second start serves")
}

// Ports the server was told to use are kept: a start that fails on them is an error, not a server elsewhere.
func TestAServerOnFixedPortsIsNotMoved(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "temporal-broken")
	starts := filepath.Join(dir, "starts")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\necho 'bind: address already in use' >&2\nexit 1\n", starts)
	require.NoError(t, os.WriteFile(broken, []byte(script), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Start(ctx, Options{Bin: broken, Dir: filepath.Join(dir, "server"), Port: 47233, Headless: true})
	require.ErrorContains(t, err, "address already in use")
	tried, err := os.ReadFile(starts)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(tried), "\n"), "one start, on the port it was given:\n%s", tried)
	require.Contains(t, string(tried), "--port 47233")
}

// A server in memory writes no database to disk, serves workflows as one with a file does, and refuses to
// restart, since it would come back without them.
func TestAServerInMemoryKeepsItsStateOffTheDiskAndRefusesToRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Bin: needs.Binary(t, "temporal"), Dir: dir, Headless: true, InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop() })

	c, err := client.DialContext(ctx, client.Options{HostPort: s.Address(), Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	require.NoError(t, err)
	defer c.Close()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "kept-in-memory", TaskQueue: "nobody"}, "Anything")
	require.NoError(t, err)
	d, err := c.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
	require.NoError(t, err)
	require.Equal(t, "kept-in-memory", d.GetWorkflowExecutionInfo().GetExecution().GetWorkflowId())

	dbs, err := filepath.Glob(filepath.Join(dir, "*.db*"))
	require.NoError(t, err)
	require.Empty(t, dbs, "no database file")
	require.ErrorContains(t, s.Restart(ctx), "cannot restart")
	require.NoError(t, s.ping(ctx), "a refused restart leaves the server serving")
}
