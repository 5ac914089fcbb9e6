package chartcheck

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"syscall"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// Command is the worker's hidden mode that runs one check: `flotilla-worker render-check --memory BYTES
// --cpu SECONDS`, the request on stdin (gob), the answer on stdout (JSON).
const Command = "render-check"

// exitSetup is the child's exit code when it could not start checking (bad arguments, limits it could not
// set, an unreadable request). Go's runtime exits with 2 when it dies, of running out of memory for one.
const exitSetup = 3

// Child runs one check in this process, which must be a child started by a Checker, and returns the
// process's exit code. It bounds itself before it reads anything.
func Child(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	memory := fs.Int64("memory", 0, "data segment limit in bytes (RLIMIT_DATA)")
	cpu := fs.Int64("cpu", 0, "CPU time limit in seconds (RLIMIT_CPU)")
	if err := fs.Parse(args); err != nil {
		return exitSetup
	}
	if *memory <= 0 || *cpu <= 0 {
		fmt.Fprintln(stderr, "render-check: --memory and --cpu are required")
		return exitSetup
	}
	if err := setLimits(*memory, *cpu); err != nil {
		fmt.Fprintln(stderr, "render-check:", err)
		return exitSetup
	}
	// The rlimit is the hard bound; this makes Go's collector work hard before it, so a chart that fits is
	// not killed for garbage that could have been collected.
	debug.SetMemoryLimit(*memory - *memory/8)
	req, err := readRequest(stdin)
	if err != nil {
		fmt.Fprintln(stderr, "render-check:", err)
		return exitSetup
	}
	if err := json.NewEncoder(stdout).Encode(render(req)); err != nil {
		fmt.Fprintln(stderr, "render-check: writing the answer:", err)
		return exitSetup
	}
	return 0
}

// setLimits lowers this process's data segment and CPU time limits to the given values (or keeps lower
// ones the worker already runs under). At the CPU limit the kernel sends SIGKILL: soft and hard limits
// are equal, and Go would ignore the SIGXCPU of a lower soft limit anyway.
func setLimits(memory, cpuSeconds int64) error {
	for _, l := range []struct {
		resource int
		name     string
		value    uint64
	}{{syscall.RLIMIT_DATA, "RLIMIT_DATA", uint64(memory)}, {syscall.RLIMIT_CPU, "RLIMIT_CPU", uint64(cpuSeconds)}} {
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(l.resource, &cur); err != nil {
			return fmt.Errorf("getrlimit %s: %w", l.name, err)
		}
		v := min(l.value, cur.Max)
		if err := syscall.Setrlimit(l.resource, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("setrlimit %s to %d: %w", l.name, v, err)
		}
	}
	return nil
}

// render runs Helm's own Install or Upgrade as a dry run: the same dependency processing, values
// coalescing, schema validation, capabilities, engine and manifest sorting as the real operation, with
// an in-memory release store and a kube client that writes nothing.
func render(req childRequest) childAnswer {
	chrt, err := req.loadChart()
	if err != nil {
		return childAnswer{Error: err.Error()}
	}
	mem := driver.NewMemory()
	mem.SetNamespace(req.Namespace)
	cfg := &action.Configuration{
		Releases:     storage.Init(mem),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities.Copy(),
		Log:          func(string, ...any) {},
	}
	if req.Cluster.Kubeconfig != "" {
		g, err := newClusterGetter(req.Cluster)
		if err != nil {
			return childAnswer{Error: "render check: " + err.Error()}
		}
		if cfg.Capabilities, err = g.capabilities(chrt, !req.Upgrade); err != nil {
			return childAnswer{Error: "render check: " + err.Error()}
		}
		cfg.RESTClientGetter = g // a dry run "server" gives the engine a lookup client from it
	}
	values := req.Values
	if values == nil {
		values = map[string]any{}
	}
	var rel *release.Release
	if req.Upgrade {
		// Helm renders revision latest+1 from the latest revision in storage; only its number matters.
		last := &release.Release{Name: req.Release, Namespace: req.Namespace, Version: req.Revision - 1, Chart: chrt,
			Info: &release.Info{Status: release.StatusDeployed}}
		if err := cfg.Releases.Create(last); err != nil {
			return childAnswer{Error: "render check: " + err.Error()}
		}
		up := action.NewUpgrade(cfg)
		up.Namespace = req.Namespace
		up.ResetValues = true
		up.DryRun, up.DryRunOption = true, "server"
		rel, err = up.RunWithContext(context.Background(), req.Release, chrt, values)
	} else {
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace = req.Release, req.Namespace
		in.DryRun, in.DryRunOption = true, "server"
		rel, err = in.RunWithContext(context.Background(), chrt, values)
	}
	if err != nil {
		return childAnswer{Error: err.Error()}
	}
	ans := childAnswer{Manifest: rel.Manifest}
	for _, h := range rel.Hooks {
		ans.Hooks = append(ans.Hooks, h.Manifest)
	}
	return ans
}
