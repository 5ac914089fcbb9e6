package api

import (
	"os/exec"
	"strings"
	"testing"
)

// The contract is imported by programs that only talk to Flotilla (the CLI, the webhook) and by the
// workflows, which must not link what the activities use to reach git, Helm and clusters. A dependency
// that brings any of these in fails here, naming the path that brought it.
func TestTheContractLinksNoClientOrSDK(t *testing.T) {
	forbidden := []string{"helm.sh/", "k8s.io/client-go", "github.com/go-git/", "google.golang.org/grpc", "go.temporal.io/"}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages, expected the standard library and fleet at least:\n%s", len(deps), out)
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) {
				t.Errorf("package api depends on %s (%s is forbidden); `go mod why %s` shows the path", d, f, d)
			}
		}
	}
}
