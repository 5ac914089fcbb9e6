package workflows

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flotilla-gitops/flotilla/api"
)

// clusterJudge judges the bundles of one observation of one cluster together, because of dependsOn: a
// bundle's new desired state waits until its dependencies are in an accepted state on this cluster, and
// the state of a dependency is the one this cluster reports for it, its own wait included (a bundle that
// waits for another is WaitApplied to those that wait for it). Only this cluster's observation counts, so
// one cluster waiting never holds back another. It is pure.
type clusterJudge struct {
	refs map[string]api.BundleRef
	obs  map[string]api.BundleObservation
	// order is the observation's, so that nothing depends on the order of a map.
	order []string
	// input is the decision input of a bundle, without its wait; failure its last apply error, if any.
	input   func(api.BundleObservation) decideInput
	failure func(api.BundleObservation) string

	states  map[string]string
	waiting map[string]dependencyWait
	// judging guards against a dependency cycle the plan did not report (it reports every one).
	judging map[string]bool
}

// dependencyWait is what holds back a bundle's new desired state on a cluster.
type dependencyWait struct {
	// Message names each dependency that holds it and why, or is empty when nothing does.
	Message string
	// OnState is true when a dependency deployed here is not in an accepted state yet: that can change at
	// any moment, unlike a dependency that is missing here, which only a new plan can bring.
	OnState bool
}

func newClusterJudge(refs []api.BundleRef, obs api.Observation, input func(api.BundleObservation) decideInput,
	failure func(api.BundleObservation) string) *clusterJudge {
	j := &clusterJudge{refs: map[string]api.BundleRef{}, obs: map[string]api.BundleObservation{}, input: input, failure: failure,
		states: map[string]string{}, waiting: map[string]dependencyWait{}, judging: map[string]bool{}}
	for _, r := range refs {
		j.refs[r.Name] = r
	}
	for _, o := range obs.Bundles {
		j.obs[o.Bundle] = o
		j.order = append(j.order, o.Bundle)
	}
	return j
}

// decideInput is a bundle's decision input, with what it waits for.
func (j *clusterJudge) decideInput(o api.BundleObservation) decideInput {
	in := j.input(o)
	ref := j.refs[o.Bundle]
	in.DependsOnError = ref.DependsOnError
	if len(ref.DependsOn) > 0 {
		in.Waiting = j.wait(o.Bundle).Message
	}
	return in
}

// status is the status a bundle reports: bundleStatus, unless a dependsOn cycle stops it or its new
// desired state waits for its dependencies.
func (j *clusterJudge) status(o api.BundleObservation) api.BundleStatus {
	s := bundleStatus(o, j.failure(o))
	in := j.decideInput(o)
	switch {
	case in.DependsOnError != "" && o.Error == "":
		return onCycle(s, o, in.DependsOnError)
	case holds(in):
		return waitingFor(s, o, in.Waiting)
	}
	return s
}

// stateOf is the state bundle name reports on this cluster.
func (j *clusterJudge) stateOf(name string) string {
	if s, ok := j.states[name]; ok {
		return s
	}
	if j.judging[name] {
		return api.StateWaitApplied
	}
	j.judging[name] = true
	s := j.status(j.obs[name]).State
	j.judging[name] = false
	j.states[name] = s
	return s
}

// deployed reports whether a bundle is deployed to this cluster, as its status lists it: a bundle that
// does not render here is, with its error.
func (j *clusterJudge) deployed(name string) bool {
	o, ok := j.obs[name]
	return ok && (o.Deploy || o.Error != "")
}

// wait is what holds back bundle name: each entry of its dependsOn is met once at least one bundle it
// matches is deployed here and every one deployed here is in an accepted state, as Fleet's agent checks
// the bundle deployments of its own cluster. An entry that matches nothing here waits, naming it.
func (j *clusterJudge) wait(name string) dependencyWait {
	if w, ok := j.waiting[name]; ok {
		return w
	}
	var w dependencyWait
	var parts []string
	add := func(p string) {
		if !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	for _, d := range j.refs[name].DependsOn {
		here := 0
		for _, b := range d.Bundles {
			if !j.deployed(b) {
				continue
			}
			here++
			if st := j.stateOf(b); !accepted(st, d.AcceptedStates) {
				add(fmt.Sprintf("%q (%s)", b, st))
				w.OnState = true
			}
		}
		if here == 0 {
			add(absent(d))
		}
	}
	if len(parts) > 0 {
		w.Message = "waiting for bundle(s) " + strings.Join(parts, ", ")
	}
	j.waiting[name] = w
	return w
}

// accepted reports whether a dependency's state is one its entry accepts: Ready when it names none.
func accepted(state string, states []string) bool {
	if len(states) == 0 {
		return state == api.StateReady
	}
	return slices.Contains(states, state)
}

// absent says why a dependsOn entry matches nothing on this cluster.
func absent(d api.Dependency) string {
	what := fmt.Sprintf("%q", d.Name)
	switch {
	case d.Name == "":
		what = "matching " + d.Selector
	case d.Selector != "":
		what += " matching " + d.Selector
	}
	if len(d.Bundles) == 0 {
		return what + " (no bundle of this GitRepo)"
	}
	return what + " (not deployed to this cluster)"
}

// waitsOnState reports whether a bundle of the observation waits for a dependency deployed here to reach
// an accepted state, which the cluster then checks for often (DependencyRecheck).
func (j *clusterJudge) waitsOnState() bool {
	for _, name := range j.order {
		if len(j.refs[name].DependsOn) > 0 && holds(j.decideInput(j.obs[name])) && j.wait(name).OnState {
			return true
		}
	}
	return false
}
