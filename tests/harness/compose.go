package harness

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Compose is the repository's docker-compose.yml brought up as a project of a test's own, with the
// images hack/images/build.sh builds here in place of the published ones (tests/compose/images.yml).
type Compose struct {
	t       *testing.T
	Project string
	root    string
	env     []string
	// profiles are enabled in every command, so that `down` takes their services down too.
	profiles []string
}

// RepoRoot is the checkout the tests run from.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// RequireDocker skips a test when no Docker engine answers, unless FLOTILLA_REQUIRE_DOCKER is set (as
// `make test` sets it), which turns the skip into a failure.
func RequireDocker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience(30*time.Second))
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err == nil {
		_, err = exec.LookPath("docker-compose")
	}
	if err != nil {
		msg := fmt.Sprintf("needs a Docker engine and docker-compose: %v %s", err, bytes.TrimSpace(out))
		if os.Getenv("FLOTILLA_REQUIRE_DOCKER") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// DockerBridgeIP is the host's address on Docker's default bridge, which containers on any compose
// network reach the host by: the test's clusters and git server listen there.
func DockerBridgeIP(t *testing.T) string {
	t.Helper()
	iface, err := net.InterfaceByName("docker0")
	require.NoError(t, err, "the Docker engine's default bridge docker0")
	addrs, err := iface.Addrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatalf("docker0 has no IPv4 address: %v", addrs)
	return ""
}

// BuildImages builds every image of the compose stack from this machine's binaries (bin/, make build
// and make tools) and Debian's PostgreSQL, without pulling.
func BuildImages(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience(10*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(RepoRoot(), "hack", "images", "build.sh"))
	cmd.Env = append(os.Environ(), "FLOTILLA_BIN="+BinDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "hack/images/build.sh:\n%s", out)
}

// StartCompose brings the stack up (`up -d --no-build`, waiting for every dependency condition of the
// compose file) with settings as its environment and the services of profiles too, and takes it down with
// its volumes when the test ends, showing the services' last log lines first if the test failed.
func StartCompose(t *testing.T, project string, settings map[string]string, profiles ...string) *Compose {
	t.Helper()
	c := &Compose{t: t, Project: project, root: RepoRoot(), env: os.Environ(), profiles: profiles}
	for k, v := range settings {
		c.env = append(c.env, k+"="+v)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := c.Run(time.Minute, "logs", "--no-color", "--tail", "40")
			t.Logf("docker-compose logs:\n%s", logs)
		}
		if out, err := c.Run(3*time.Minute, "down", "-v", "--remove-orphans", "--timeout", "5"); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
	})
	out, err := c.Run(10*time.Minute, "up", "-d", "--no-build")
	require.NoError(t, err, "docker-compose up:\n%s", out)
	return c
}

// Run runs docker-compose on the project, with both compose files, and returns what it printed.
func (c *Compose) Run(limit time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	full := []string{"-p", c.Project, "-f", filepath.Join(c.root, "docker-compose.yml"),
		"-f", filepath.Join(c.root, "tests", "compose", "images.yml")}
	for _, p := range c.profiles {
		full = append(full, "--profile", p)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, "docker-compose", full...)
	cmd.Dir = c.root
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// MustRun is Run failing the test on an error.
func (c *Compose) MustRun(limit time.Duration, args ...string) string {
	c.t.Helper()
	out, err := c.Run(limit, args...)
	require.NoError(c.t, err, "docker-compose %s:\n%s", strings.Join(args, " "), out)
	return out
}

// Container is the ID of a service's (first) container.
func (c *Compose) Container(service string) string {
	c.t.Helper()
	return strings.TrimSpace(c.MustRun(time.Minute, "ps", "-q", service))
}

// Leftovers lists every container, volume and network still labelled with the project.
func (c *Compose) Leftovers() []string {
	c.t.Helper()
	var left []string
	filter := "label=com.docker.compose.project=" + c.Project
	for _, kind := range [][]string{{"ps", "-a", "-q"}, {"volume", "ls", "-q"}, {"network", "ls", "-q"}} {
		args := append(kind, "--filter", filter)
		out, err := exec.Command("docker", args...).CombinedOutput()
		require.NoError(c.t, err, "docker %s: %s", strings.Join(args, " "), out)
		for _, id := range strings.Fields(string(out)) {
			left = append(left, kind[0]+" "+id)
		}
	}
	return left
}

// ContainerKubeconfig writes the kubeconfig at src as a container reads it: certificates inlined, since
// the files it names are not mounted, and readable by the image's unprivileged user.
func ContainerKubeconfig(t *testing.T, src, dst string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(src)
	require.NoError(t, err)
	require.NoError(t, clientcmdapi.FlattenConfig(cfg))
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o644))
}

// FreePort is a TCP port free on 127.0.0.1 a moment ago, for a service the compose file publishes.
func FreePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}
