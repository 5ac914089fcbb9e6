package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// CLI runs bin/flotilla against one Temporal address and one installation's task queue: `make up` with
// it, and the end-to-end tests (tests/harness) through Exec. The queue (empty: api.DefaultTaskQueue) is
// always on the command line, as in StartWorker.
type CLI struct {
	Bin, Address, TaskQueue string
	// Args are global flags given before each command's own, e.g. --codec-key-file.
	Args []string
	// Env are environment variables (NAME=value) added to the caller's, e.g. TEMPORAL_TLS_*.
	Env []string
	Out io.Writer // where its output is copied as it runs, if anywhere
}

// CLIResult is what one run of the CLI printed and how it exited.
type CLIResult struct {
	Stdout, Stderr string
	ExitCode       int
}

// Run runs the CLI; a failure carries its stderr.
func (c CLI) Run(ctx context.Context, args ...string) error {
	res, err := c.Exec(ctx, args...)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit status %d", res.ExitCode)
	}
	if err != nil {
		return fmt.Errorf("flotilla %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(res.Stderr))
	}
	return nil
}

// Exec runs the CLI and returns what it printed and its exit code. The error is for a CLI that could not
// start or was stopped by ctx, never for one that exited with a failure: that is the caller's to judge.
func (c CLI) Exec(ctx context.Context, args ...string) (CLIResult, error) {
	global := append([]string{"--address", c.Address, "--task-queue", orDefaultQueue(c.TaskQueue)}, c.Args...)
	cmd := exec.CommandContext(ctx, c.Bin, append(global, args...)...)
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if c.Out != nil {
		cmd.Stdout = io.MultiWriter(&stdout, c.Out)
		cmd.Stderr = io.MultiWriter(&stderr, c.Out)
	}
	err := cmd.Run()
	res := CLIResult{Stdout: stdout.String(), Stderr: stderr.String()}
	if err != nil && ctx.Err() != nil {
		return res, fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		res.ExitCode = exit.ExitCode()
		return res, nil
	}
	return res, err
}
