package fleet

import (
	"os/exec"
	"strings"
	"testing"
)

// The model is the ground floor: the contract (api) and everything above it build on it, so it may import
// nothing of Flotilla's outside fleet/ itself. An import that runs back up fails here, naming it.
func TestTheModelImportsNothingAboveIt(t *testing.T) {
	const module = "github.com/flotilla-gitops/flotilla/"
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	var own int
	for _, d := range deps {
		if !strings.HasPrefix(d, module) {
			continue
		}
		own++
		if rest := strings.TrimPrefix(d, module); rest != "fleet" && !strings.HasPrefix(rest, "fleet/") {
			t.Errorf("fleet/… depends on %s; what the model needs belongs in fleet/, what needs more than the model above it", d)
		}
	}
	if own < 5 {
		t.Fatalf("go list -deps ./... listed %d of fleet's own packages, expected its subpackages:\n%s", own, out)
	}
}
