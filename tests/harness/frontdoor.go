package harness

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flotilla-gitops/flotilla/tests/env/needs"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
)

// StartController starts flotilla-controller on the management cluster backing (which installs Fleet's
// CustomResourceDefinitions there) and waits until it serves them. It is stopped when the test ends (and its
// log shown if the test failed); the returned process may be killed before, and started again with
// StartController.
func (s *Stack) StartController(backing string, extraArgs ...string) *proc.Process {
	s.t.Helper()
	needs.Binaries(s.t, "flotilla-controller", "kubectl")
	logFile := filepath.Join(s.Dir, "controller.log")
	args := append([]string{"--kubeconfig", s.K8s.Kubeconfig(backing), "--address", s.address, "--dev-log"}, s.connArgs...)
	c, err := proc.Start(proc.Spec{Name: "flotilla-controller", Path: filepath.Join(BinDir(), "flotilla-controller"),
		Args: append(args, extraArgs...), LogFile: logFile})
	require.NoError(s.t, err)
	s.t.Cleanup(func() {
		_ = c.Stop(5 * time.Second)
		if s.t.Failed() {
			dumpLog(s.t, logFile)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), Patience(3*time.Minute))
	defer cancel()
	// Ready once it runs and the API server serves every kind it installs: kubectl finds them by name.
	died, err := c.AwaitReady(ctx, 3*time.Minute, 200*time.Millisecond, func(ctx context.Context) error {
		_, err := s.kubectl(ctx, backing, "get", "gitrepos,helmops,clusters.fleet.cattle.io,clustergroups,gitreporestrictions", "-A")
		if err != nil {
			return err
		}
		return nil
	})
	if died {
		dumpLog(s.t, logFile)
	}
	require.NoError(s.t, err, "flotilla-controller serving Fleet's kinds")
	return c
}

// KubectlResult is what one kubectl run printed and how it exited.
type KubectlResult struct {
	Stdout, Stderr string
	ExitCode       int
}

// Kubectl runs bin/kubectl against the local cluster backing, as its admin, for a command whose failure
// the test examines; the test fails only when kubectl could not run or did not end within a minute.
func (s *Stack) Kubectl(backing string, args ...string) KubectlResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience(time.Minute))
	defer cancel()
	res, err := s.kubectl(ctx, backing, args...)
	if res.ExitCode == 0 || err == nil {
		return res
	}
	require.NotEqual(s.t, -1, res.ExitCode, "kubectl %s: %v", strings.Join(args, " "), err)
	return res
}

// KubectlRun is Kubectl for a command that must succeed; it returns its stdout.
func (s *Stack) KubectlRun(backing string, args ...string) string {
	s.t.Helper()
	res := s.Kubectl(backing, args...)
	require.Equal(s.t, 0, res.ExitCode, "kubectl %s: %s", strings.Join(args, " "), res.Stderr)
	return res.Stdout
}

// KubectlApply is `kubectl apply -f` of a YAML document on backing; it returns kubectl's stdout.
func (s *Stack) KubectlApply(backing, doc string, extraArgs ...string) KubectlResult {
	s.t.Helper()
	return s.Kubectl(backing, append([]string{"apply", "-f", s.ApplyFile(doc)}, extraArgs...)...)
}

func (s *Stack) kubectl(ctx context.Context, backing string, args ...string) (KubectlResult, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(BinDir(), "kubectl"), append([]string{"--kubeconfig", s.K8s.Kubeconfig(backing)}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := KubectlResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if err == nil {
		return res, nil
	}
	return res, &kubectlError{args: args, err: err, stderr: res.Stderr}
}

type kubectlError struct {
	args   []string
	err    error
	stderr string
}

func (e *kubectlError) Error() string {
	return "kubectl " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + strings.TrimSpace(e.stderr)
}

// InlineKubeconfig is the kubeconfig of backing with its certificates inlined, as a Fleet kubeconfig
// Secret holds it (key `value`).
func (s *Stack) InlineKubeconfig(backing string) []byte {
	s.t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.K8s.Kubeconfig(backing))
	require.NoError(s.t, err)
	require.NoError(s.t, clientcmdapi.FlattenConfig(cfg))
	data, err := clientcmd.Write(*cfg)
	require.NoError(s.t, err)
	return data
}
