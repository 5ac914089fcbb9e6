package harness

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
)

// Installation is one Flotilla installation on the stack's Temporal server: a worker polling TaskQueue,
// and the CLI run with --task-queue TaskQueue. Installations on one stack share its namespace.
type Installation struct {
	s         *Stack
	TaskQueue string
}

// Installation is the stack's own installation, whose worker polls api.DefaultTaskQueue.
func (s *Stack) Installation() *Installation {
	return &Installation{s: s, TaskQueue: api.DefaultTaskQueue}
}

// StartInstallation starts one more installation on the stack's Temporal server: a worker polling
// taskQueue with workerArgs (e.g. --webhook-listen), its own git cache and log, stopped when the test ends.
func (s *Stack) StartInstallation(taskQueue string, workerArgs ...string) *Installation {
	s.t.Helper()
	log := filepath.Join(s.Dir, "worker-"+taskQueue+".log")
	w, err := devenv.StartWorker(devenv.WorkerOptions{Bin: BinDir(), Address: s.address, TaskQueue: taskQueue, InstallationKeyFile: s.InstallationKeyFile,
		CacheDir: filepath.Join(s.Dir, "gitcache-"+taskQueue), LogFile: log, ExtraArgs: append(append([]string{}, s.connArgs...), workerArgs...)})
	require.NoError(s.t, err)
	s.t.Cleanup(func() {
		_ = w.Stop(5 * time.Second)
		if s.t.Failed() {
			dumpLog(s.t, log)
		}
	})
	return &Installation{s: s, TaskQueue: taskQueue}
}

// CLI runs bin/flotilla with the installation's task queue, for a command whose failure the test examines.
func (i *Installation) CLI(args ...string) devenv.CLIResult {
	i.s.t.Helper()
	return runCLI(i.s.t, devenv.CLI{Bin: filepath.Join(BinDir(), "flotilla"), Address: i.s.address, TaskQueue: i.TaskQueue, Args: i.s.cliArgs}, args...)
}

// CLIRun runs bin/flotilla with the installation's task queue, fails the test unless it succeeds, and
// returns its stdout.
func (i *Installation) CLIRun(args ...string) string {
	i.s.t.Helper()
	res := i.CLI(args...)
	require.Equal(i.s.t, 0, res.ExitCode, "flotilla --task-queue %s %s: exit code %d: %s", i.TaskQueue, strings.Join(args, " "), res.ExitCode, strings.TrimSpace(res.Stderr))
	return res.Stdout
}
