package devenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeCLI is a stand-in for bin/flotilla that prints its arguments and exits as the script says.
func fakeCLI(t *testing.T, script string) CLI {
	bin := filepath.Join(t.TempDir(), "flotilla")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	return CLI{Bin: bin, Address: "127.0.0.1:7233"}
}

// A command that fails is an answer, not an error: the caller gets what it printed on each stream and
// its exit code (3 is the CLI's "not ready before --timeout").
func TestExecReturnsWhatAFailingCommandPrintedAndItsExitCode(t *testing.T) {
	cli := fakeCLI(t, `echo "$@"; echo "gitrepo shop: not ready" >&2; exit 3`)
	res, err := cli.Exec(context.Background(), "status", "shop", "--wait")
	require.NoError(t, err)
	require.Equal(t, CLIResult{Stdout: "--address 127.0.0.1:7233 --task-queue flotilla status shop --wait\n", Stderr: "gitrepo shop: not ready\n", ExitCode: 3}, res)

	err = cli.Run(context.Background(), "status", "shop")
	require.EqualError(t, err, "flotilla status shop: exit status 3: gitrepo shop: not ready")
}

// A CLI that does not end in time is stopped, and that is an error whatever the exit code the kill left.
func TestExecReportsACommandStoppedByItsContext(t *testing.T) {
	cli := fakeCLI(t, `exec sleep 60`)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := cli.Exec(ctx, "status", "shop", "--wait")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// Every command names its installation's task queue, so a FLOTILLA_TASK_QUEUE in the shell that runs the
// tests or `make up` cannot send it to another installation.
func TestExecNamesTheInstallationsTaskQueue(t *testing.T) {
	cli := fakeCLI(t, `echo "$@"`)
	cli.TaskQueue = "flotilla-b"
	res, err := cli.Exec(context.Background(), "get", "gitrepos")
	require.NoError(t, err)
	require.Equal(t, "--address 127.0.0.1:7233 --task-queue flotilla-b get gitrepos\n", res.Stdout)
}
