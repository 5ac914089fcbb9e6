package main

import (
	"os/exec"
	"strings"
	"testing"
)

// What ships is the worker, the CLI and the agent; the test rig (tests/…) and the benchmark live beside them
// and must never be linked into them, so the folder a package sits in says whether it ships.
func TestTheShippedBinariesLinkNoTestRig(t *testing.T) {
	const module = "github.com/flotilla-gitops/flotilla"
	shipped := []string{module + "/worker", module + "/starter", module + "/cmd/flotilla-agent"}
	forbidden := []string{module + "/tests", module + "/bench", module + "/cmd/flotilla-dev", module + "/cmd/flotilla-bench"}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, shipped...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages for %v, expected the SDKs at least:\n%s", len(deps), shipped, out)
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("a shipped binary links %s; `go mod why -m` or `go list -deps` shows the path", d)
			}
		}
	}
}

// What only starts, signals or queries workflows (the CLI, the webhook, the agent, the benchmark, the test
// harness) links the contract (api), never the workflow code: the worker alone runs workflows.
func TestOnlyTheWorkerLinksTheWorkflows(t *testing.T) {
	const module = "github.com/flotilla-gitops/flotilla"
	for _, p := range []string{"/starter", "/webhook", "/cmd/flotilla-agent", "/bench", "/tests/harness"} {
		out, err := exec.Command("go", "list", "-deps", module+p).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", p, err, out)
		}
		deps := strings.Fields(string(out))
		linksAPI := false
		for _, d := range deps {
			if d == module+"/workflows" {
				t.Errorf("%s links the workflows; it should need only %s/api", p, module)
			}
			linksAPI = linksAPI || d == module+"/api"
		}
		if !linksAPI {
			t.Errorf("%s does not link the contract at all: go list -deps printed\n%s", p, out)
		}
	}
}
