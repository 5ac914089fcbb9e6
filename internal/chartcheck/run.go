package chartcheck

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// run starts the child, hands it req and reads its answer. Every way the child can go wrong ends here:
// the caller's context, the wall-clock limit, an answer over the output limit, the kernel's kill at the
// CPU limit, Go's death at the memory limit, and anything else, which is reported with the first line
// the child wrote to stderr.
func (c *Checker) run(ctx context.Context, chartName string, req childRequest) (childAnswer, error) {
	var in bytes.Buffer
	if err := gob.NewEncoder(&in).Encode(req); err != nil {
		return childAnswer{}, fmt.Errorf("chart %q: render check: encoding the request: %w", chartName, err)
	}
	limits := c.limits
	wallCtx, cancel := context.WithTimeout(ctx, limits.Time)
	defer cancel()
	cmd := exec.CommandContext(wallCtx, c.executable, Command,
		"--memory", strconv.FormatInt(limits.Memory, 10), "--cpu", strconv.FormatInt(int64(limits.CPU/time.Second), 10))
	cmd.Stdin = &in
	stderr := &headBuffer{max: stderrKept}
	cmd.Stderr = stderr
	// One core at most, so a bomb leaves the other cores to the worker; no goroutine dumps when it dies.
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GOTRACEBACK=none")
	// Its own process group, so whatever it started (a kubeconfig's exec credential plugin) is killed
	// with it; and killed if the worker dies first. Pdeathsig fires when the *thread* that started the
	// child ends, and Go ends a thread whose locked goroutine exits: this goroutine holds its thread
	// until the child is reaped, so no thread of the worker's going away kills a healthy check.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return childAnswer{}, fmt.Errorf("chart %q: render check: %w", chartName, err)
	}
	if err := cmd.Start(); err != nil {
		return childAnswer{}, fmt.Errorf("chart %q: render check: starting %s: %w", chartName, c.executable, err)
	}
	c.started.Add(1)
	out, _ := io.ReadAll(io.LimitReader(stdout, limits.Output+1))
	// The child has closed its stdout (it exited) or is past the output limit; either way its group goes.
	// It is not reaped yet, so its process group ID cannot belong to anyone else.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	waitErr := cmd.Wait()

	switch {
	case ctx.Err() != nil:
		return childAnswer{}, fmt.Errorf("chart %q: render check: %w", chartName, ctx.Err())
	case int64(len(out)) > limits.Output:
		return childAnswer{}, limits.limitError(chartName, LimitOutput)
	case errors.Is(wallCtx.Err(), context.DeadlineExceeded):
		return childAnswer{}, limits.limitError(chartName, LimitTime)
	case killedAtCPULimit(cmd.ProcessState, limits.CPU):
		return childAnswer{}, limits.limitError(chartName, LimitCPU)
	case outOfMemory(cmd.ProcessState, stderr.String()):
		return childAnswer{}, limits.limitError(chartName, LimitMemory)
	case waitErr != nil:
		used := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return childAnswer{}, fmt.Errorf("chart %q: render check failed (%v after %s of CPU time): %s", chartName, waitErr,
			used.Round(10*time.Millisecond), firstLine(stderr.String()))
	}
	var ans childAnswer
	if err := json.Unmarshal(out, &ans); err != nil {
		return childAnswer{}, fmt.Errorf("chart %q: render check: reading the answer: %w", chartName, err)
	}
	return ans, nil
}

// killedAtCPULimit is the kernel's SIGKILL at RLIMIT_CPU (or its SIGXCPU, had Go not ignored it): the
// child died of a signal having used its CPU time. The kernel checks the limit against its own runtime
// clock, while the user and system times wait reports are that runtime split by tick samples: on a busy
// machine they were seen 6 % and 10.3 % short of a limit the kernel had enforced (2.83 s and 2.69 s of
// 3 s), so a fifth is allowed.
func killedAtCPULimit(st *os.ProcessState, limit time.Duration) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || (ws.Signal() != syscall.SIGKILL && ws.Signal() != syscall.SIGXCPU) {
		return false
	}
	return st.UserTime()+st.SystemTime() >= limit-limit/5
}

// outOfMemory is Go's runtime dying because the kernel refused it memory at RLIMIT_DATA: "fatal error:
// runtime: out of memory", or a thread or stack it could not map.
func outOfMemory(st *os.ProcessState, stderr string) bool {
	if st.ExitCode() != 2 {
		return false
	}
	for _, s := range []string{"out of memory", "cannot allocate memory", "errno=12"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "no output"
	}
	return s
}

// headBuffer keeps the first max bytes written to it and accepts the rest unread, so a child printing
// without end never blocks and never fills the parent's memory.
type headBuffer struct {
	max int
	buf bytes.Buffer
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (h *headBuffer) String() string { return h.buf.String() }
