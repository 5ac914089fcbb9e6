// Package proc starts and stops processes by PID: each runs in its own session (so `make up` can leave it
// running), logs to a file, and may record its PID and binary in a pid file that `make down` reads.
package proc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec describes a process to start.
type Spec struct {
	Name, Path string
	Args, Env  []string
	Dir        string
	LogFile    string
	PIDFile    string
	// Detached keeps the process running after this one exits (`make up`). Otherwise the kernel kills it
	// when its parent dies, so a test binary killed by a timeout leaves nothing behind.
	Detached bool
}

// Process is a started process.
type Process struct {
	spec Spec
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// Start starts s in a new session with stdin from /dev/null and stdout+stderr appended to LogFile.
func Start(s Spec) (*Process, error) {
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if !s.Detached {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if s.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(s.LogFile), 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.Name, err)
	}
	p := &Process{spec: s, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	if s.PIDFile != "" {
		if err := os.MkdirAll(filepath.Dir(s.PIDFile), 0o755); err != nil {
			return p, err
		}
		abs, _ := filepath.Abs(s.Path)
		if err := os.WriteFile(s.PIDFile, []byte(fmt.Sprintf("%d\n%s\n", cmd.Process.Pid, abs)), 0o644); err != nil {
			return p, err
		}
	}
	return p, nil
}

// PID is the process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Alive reports whether the process has not exited.
func (p *Process) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Done is closed when the process exits.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the process to exit.
func (p *Process) Wait() error {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Stop sends SIGTERM, waits up to grace, then SIGKILLs.
func (p *Process) Stop(grace time.Duration) error {
	defer p.removePIDFile()
	if !p.Alive() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	return p.Kill()
}

// Kill sends SIGKILL and waits for the exit.
func (p *Process) Kill() error {
	defer p.removePIDFile()
	if !p.Alive() {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.done
	return nil
}

func (p *Process) removePIDFile() {
	if p.spec.PIDFile != "" {
		_ = os.Remove(p.spec.PIDFile)
	}
}

// StopPIDFiles stops every process recorded by a *.pid file in dir, but only when the PID still runs the
// recorded binary, so a recycled PID is never signalled. The files are removed.
func StopPIDFiles(dir string, grace time.Duration) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.pid"))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
		if err != nil {
			_ = os.Remove(f)
			continue
		}
		if len(lines) > 1 && runs(pid, strings.TrimSpace(lines[1])) {
			if err := stopPID(pid, grace); err != nil {
				errs = append(errs, fmt.Errorf("%s (pid %d): %w", f, pid, err))
			}
		}
		_ = os.Remove(f)
	}
	return errors.Join(errs...)
}

func runs(pid int, binary string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err == nil {
		want, _ := filepath.EvalSymlinks(binary)
		if exe == binary || exe == want {
			return true
		}
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), binary)
}

func stopPID(pid int, grace time.Duration) error {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// FreePort returns a free TCP port on 127.0.0.1 for a server that will be started with it.
//
// The port is picked below the kernel's ephemeral range when it can be: a port from that range (what
// listening on :0 gives) is also what every outgoing connection on the machine takes as its source port,
// so between picking it and the server binding it a client connection could take it, and the server would
// fail to start. Below the range, only another picker can race us; the random start makes that rare.
func FreePort() (int, error) {
	lo := ephemeralLow()
	const floor = 10000
	if lo-floor >= 1000 {
		portMu.Lock()
		defer portMu.Unlock()
		span := lo - floor
		start := rand.IntN(span)
		for i := 0; i < 200; i++ {
			port := floor + (start+i*7919)%span
			if handed[port] {
				continue
			}
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				continue
			}
			l.Close()
			handed[port] = true
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	portMu sync.Mutex
	// handed are the ports this process gave out: two servers it starts must not get the same one, even
	// when the first has not bound it yet.
	handed = map[int]bool{}
)

// ephemeralLow is the first port of the kernel's ephemeral range (Linux default 32768).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return lo
}

// Tail returns the last n lines of a log file, for an error that explains why a process did not start.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// AwaitReady polls ready every poll until it succeeds, the process exits, limit passes or ctx ends.
// died says the process exited first, so that a caller may start it again (on ports taken meanwhile, say).
// Errors name the process and carry the last lines of its log. A process that never became ready is killed.
func (p *Process) AwaitReady(ctx context.Context, limit, poll time.Duration, ready func(context.Context) error) (died bool, err error) {
	deadline := time.Now().Add(limit)
	for {
		err := ready(ctx)
		if err == nil {
			return false, nil
		}
		if !p.Alive() {
			return true, fmt.Errorf("%s exited while starting (%v):\n%s", p.spec.Name, err, Tail(p.spec.LogFile, 15))
		}
		if time.Now().After(deadline) {
			_ = p.Kill()
			return false, fmt.Errorf("%s not ready after %s (%v):\n%s", p.spec.Name, limit, err, Tail(p.spec.LogFile, 15))
		}
		select {
		case <-ctx.Done():
			_ = p.Kill()
			return false, ctx.Err()
		case <-time.After(poll):
		}
	}
}
