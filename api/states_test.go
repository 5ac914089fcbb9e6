package api

import (
	"testing"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// dependsOn acceptedStates are checked against fleet.States when fleet.yaml loads and compared with the
// states reported here: a state in one list and not the other could never be accepted.
func TestFleetYAMLStatesAreTheReportedStates(t *testing.T) {
	if len(fleet.States) != len(stateRank) {
		t.Fatalf("fleet.States %v, reported states %v", fleet.States, stateRank)
	}
	for i, s := range fleet.States {
		if _, ok := stateRank[s]; !ok {
			t.Errorf("fleet.States has %q, which is never reported", s)
		}
		if i > 0 && !Worse(s, fleet.States[i-1]) {
			t.Errorf("fleet.States lists %q after %q, which ranks above it", s, fleet.States[i-1])
		}
	}
}
