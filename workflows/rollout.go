package workflows

import (
	"slices"
	"sort"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// The rollout is what a GitRepo knows of each cluster and how it decides what to hand over next. It is
// plain Go with no workflow.Context: the GitRepo workflow feeds it reports and delivery outcomes and asks it
// what to deliver, remove or restart, and performs the answers (signals, child starts) itself. Every
// iteration over clusters whose order can show in a decision goes in name order or plan order, so the
// decisions replay identically; a count or an earliest moment may range over the map.

// clusterEntry is everything a GitRepo keeps about one cluster across continue-as-new.
//
// Invariants: a cluster being removed gets no new delivery; an entry is forgotten once its removal is
// confirmed and nothing was delivered to it since, or when a plan no longer has it and nothing of this
// GitRepo runs or is being delivered there.
type clusterEntry struct {
	// Delivered is the desired state last handed to the cluster's workflow; nil before the first, after a
	// failed hand-over (so it is delivered again), and while the cluster is being removed.
	Delivered *delivery `json:"delivered,omitempty"`
	// Status is the cluster workflow's last report; nil until it reports.
	Status *api.ClusterStatus `json:"status,omitempty"`
	// Running says a workflow of this GitRepo runs (or ran) for the cluster, so a signal reaches it;
	// otherwise the next delivery starts a child.
	Running bool `json:"running,omitempty"`
	// Removing says the cluster was told to uninstall the GitRepo and end; its reports are ignored until
	// it confirms the removal.
	Removing bool `json:"removing,omitempty"`
	// Forget says the removal only forgets the cluster: it is leaving the inventory with its workloads
	// kept, and its workflow ends without touching it.
	Forget bool `json:"forget,omitempty"`
	// Removal is the cluster workflow's last report while it uninstalls: why it has not succeeded yet.
	Removal *api.ClusterStatus `json:"removal,omitempty"`
}

// removal is one decided remove signal: uninstall the GitRepo from the cluster, or only forget it.
type removal struct {
	Cluster string
	Forget  bool
}

// delivery records the desired state last sent to a cluster workflow.
type delivery struct {
	// Hash identifies the desired state (target and check interval), so an unchanged one is not sent again.
	Hash string `json:"hash"`
	// Generation is the GitRepo-wide sequence number the desired state was sent with.
	Generation int64 `json:"generation"`
	// At is when it was sent; an unacknowledged delivery holds a rollout-window slot until AckTimeout.
	At time.Time `json:"at"`
	// Acked is set when the cluster reported a status of this generation or later.
	Acked bool `json:"acked"`
	// Base identifies the desired state without its sync windows, when it has some: a change of windows
	// alone reaches a cluster whose windows are closed.
	Base string `json:"base,omitempty"`
	// Current, in a carried state only, stands for a Hash that is the cluster's desired state at the
	// carried plan: the next run computes it again (gitRepoRun.restoreHashes) rather than carry it.
	Current bool `json:"current,omitempty"`
}

// rollout is the per-cluster state of a GitRepo and the rules that change it.
type rollout struct {
	Clusters map[string]*clusterEntry `json:"clusters,omitempty"`
	// Generation numbers deliveries; a cluster workflow ignores a desired state older than its own.
	Generation int64 `json:"generation,omitempty"`
	// Gates is what people and time decided about the rollout of a rolloutStrategy (rollout_gates.go).
	Gates *rolloutGates `json:"gates,omitempty"`
	// soakDue is when the next soak time ends, as the last decision saw it (zero: none runs).
	soakDue time.Time
	// ungated are the clusters handed their desired state past partitions and gates (pinned by a
	// rollback), and closed those whose sync windows are closed, with why, both set by the caller before
	// each decision; windowOnly are the closed ones whose change is only their windows, which go anyway.
	ungated, closed map[string]string
	windowOnly      map[string]bool
}

func newRollout() *rollout { return &rollout{Clusters: map[string]*clusterEntry{}} }

func (r *rollout) entry(cluster string) *clusterEntry {
	e := r.Clusters[cluster]
	if e == nil {
		e = &clusterEntry{}
		r.Clusters[cluster] = e
	}
	return e
}

// names are the clusters with an entry, in name order.
func (r *rollout) names() []string { return sortedKeys(r.Clusters) }

// onReport takes a cluster workflow's status report. A report of a removed cluster forgets it; any other
// report from a cluster being removed is stale and ignored.
func (r *rollout) onReport(rep api.ClusterReport) {
	if rep.Removed {
		if e := r.Clusters[rep.Cluster]; e != nil {
			e.Status, e.Running, e.Removing, e.Forget, e.Removal = nil, false, false, false, nil
			r.forgetIfEmpty(rep.Cluster)
		}
		return
	}
	if rep.Removing {
		// How an uninstall is going: shown beside the planned clusters, never as one of them.
		if e := r.Clusters[rep.Cluster]; e != nil && e.Removing {
			st := rep.Status
			e.Removal = &st
		}
		return
	}
	if e := r.Clusters[rep.Cluster]; e != nil && e.Removing {
		return
	}
	e := r.entry(rep.Cluster)
	e.Running = true
	st := rep.Status
	e.Status = &st
	if e.Delivered != nil && st.Generation >= e.Delivered.Generation {
		e.Delivered.Acked = true
	}
}

// onDelivered takes the outcome of a hand-over: after a failure the desired state is delivered again.
func (r *rollout) onDelivered(cluster string, err error) {
	if err != nil {
		if e := r.Clusters[cluster]; e != nil {
			e.Delivered = nil
		}
		return
	}
	r.entry(cluster).Running = true
}

// forgetIfEmpty drops an entry that holds nothing any more.
func (r *rollout) forgetIfEmpty(cluster string) {
	if e := r.Clusters[cluster]; e != nil && *e == (clusterEntry{}) {
		delete(r.Clusters, cluster)
	}
}

// onEnded takes a child of this run that ended without being asked to (terminated from the Web UI, say):
// the next delivery starts it again.
func (r *rollout) onEnded(cluster string) {
	if e := r.Clusters[cluster]; e != nil && !e.Removing {
		e.Running, e.Delivered = false, nil
	}
}

// onRemoveGone takes a remove signal that found no workflow: there is nothing left to uninstall through
// it, so the cluster is forgotten.
func (r *rollout) onRemoveGone(cluster string) {
	r.onReport(api.ClusterReport{Cluster: cluster, Removed: true})
}

// untargeted applies a new plan: it returns the clusters a workflow of this GitRepo runs on that the plan
// no longer targets, in name order, marked as removing; the caller tells each to uninstall. A planned
// cluster stops being removed, and an unplanned one on which nothing of this GitRepo runs is forgotten.
func (r *rollout) untargeted(plan *api.Plan) []string {
	planned := map[string]bool{}
	for _, c := range plan.Clusters {
		planned[c.Name] = true
		if e := r.Clusters[c.Name]; e != nil {
			e.Removing, e.Forget, e.Removal = false, false, nil
		}
	}
	var gone []string
	for _, name := range r.names() {
		e := r.Clusters[name]
		switch {
		case planned[name] || e.Removing:
		case e.Running:
			gone = append(gone, name)
			e.Removing, e.Delivered = true, nil
		default:
			e.Status = nil // nothing runs there for us
			r.forgetIfEmpty(name)
		}
	}
	return gone
}

// leave takes the inventory's leaving clusters (ADR 16): a leaving cluster a workflow of this GitRepo runs
// on is told to uninstall, or, when it leaves with its workloads kept, to end without touching it; one
// already being removed is told again only to switch from uninstalling to forgetting (never back: some
// GitRepos may have forgotten it already); one nothing of this GitRepo runs on is forgotten here. A
// hand-over still in flight keeps its entry: the caller calls leave again once it lands. It returns the
// remove signals to send, in name order.
func (r *rollout) leave(leaving []api.LeavingCluster) []removal {
	var out []removal
	for _, l := range leaving {
		e := r.Clusters[l.Name]
		switch {
		case e == nil:
		case e.Removing && (e.Forget || !l.KeepWorkloads):
		case e.Removing:
			e.Forget = true
			out = append(out, removal{Cluster: l.Name, Forget: true})
		case e.Running:
			e.Removing, e.Forget, e.Delivered = true, l.KeepWorkloads, nil
			out = append(out, removal{Cluster: l.Name, Forget: l.KeepWorkloads})
		default:
			e.Status = nil
			r.forgetIfEmpty(l.Name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out
}

// removalView is a cluster being removed, as status shows it: its workflow's last report while it
// uninstalls (why it fails), or what it is doing.
func (r *rollout) removalView(cluster string) api.ClusterStatus {
	e := r.Clusters[cluster]
	if e.Removal != nil {
		return *e.Removal
	}
	msg := "uninstalling"
	if e.Forget {
		msg = "forgetting the cluster; its releases and objects stay"
	}
	return api.ClusterStatus{Name: cluster, State: api.StateWaitApplied, Message: msg, Reachable: true}
}

// removeAll marks every cluster a workflow of this GitRepo runs on as removing, for a GitRepo being
// deleted, and returns those not already being removed, in name order.
func (r *rollout) removeAll() []string { return r.removeNext(len(r.Clusters)) }

// removeNext marks up to n of the clusters a workflow of this GitRepo runs on and that are not yet being
// removed as removing, for a GitRepo being deleted a few hundred at a time, and returns them in name order.
func (r *rollout) removeNext(n int) []string {
	var newly []string
	for _, name := range r.names() {
		if len(newly) >= n {
			break
		}
		if e := r.Clusters[name]; e.Running && !e.Removing {
			e.Removing = true
			newly = append(newly, name)
		}
	}
	return newly
}

// leftToRemove are the clusters a GitRepo being deleted still has to remove itself from: those being
// removed, and those a workflow of it runs on that are not told yet, in name order.
func (r *rollout) leftToRemove() []string {
	var out []string
	for _, name := range r.names() {
		if e := r.Clusters[name]; e.Removing || e.Running {
			out = append(out, name)
		}
	}
	return out
}

// anyLeftToRemove says whether leftToRemove has any, without sorting every name to say it.
func (r *rollout) anyLeftToRemove() bool {
	for _, e := range r.Clusters {
		if e.Removing || e.Running {
			return true
		}
	}
	return false
}

// removing are the clusters not yet confirmed removed, in name order.
// The map is ranged over for a set, a count or an earliest moment, which no order changes.
//
//workflowcheck:ignore
func (r *rollout) removing() []string {
	// Every pass asks; sorting 10,000 names to find none was a tenth of a pass.
	var out []string
	for name, e := range r.Clusters {
		if e.Removing {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// inflight counts deliveries waiting for their cluster's acknowledgement and not yet timed out.
// The map is ranged over for a set, a count or an earliest moment, which no order changes.
//
//workflowcheck:ignore
func (r *rollout) inflight(now time.Time) int {
	n := 0
	for _, e := range r.Clusters { // a count: the order makes no difference
		if d := e.Delivered; d != nil && !d.Acked && now.Sub(d.At) < AckTimeout {
			n++
		}
	}
	return n
}

// nextAckDeadline is the earliest moment after now an unacknowledged delivery times out, if before limit.
// One that timed out already frees its slot without waking anyone: counting it would put the wake-up in
// the past, and the loop would spin without ever letting time pass.
// The map is ranged over for a set, a count or an earliest moment, which no order changes.
//
//workflowcheck:ignore
func (r *rollout) nextAckDeadline(now, limit time.Time) time.Time {
	for _, e := range r.Clusters { // the earliest: the order makes no difference
		d := e.Delivered
		if d == nil || d.Acked || d.Hash == "" {
			continue
		}
		if due := d.At.Add(AckTimeout); due.After(now) && due.Before(limit) {
			limit = due
		}
	}
	return limit
}

// handOver is one decided delivery: the desired state, and whether the cluster's workflow runs already
// (signal it) or must be started as a child.
type handOver struct {
	Cluster string
	Update  api.DesiredUpdate
	Running bool
}

// nextDeliveries decides which planned clusters get their desired state now, in plan order: those whose
// desired state changed, while fewer than window deliveries are waiting for an acknowledgement. desired
// builds a cluster's desired state; each decided one is recorded with the next generation.
//
// With a rolloutStrategy (plan.Rollout), only the clusters its partitions allow now are handed theirs.
func (r *rollout) nextDeliveries(plan *api.Plan, now time.Time, window int, desired func(api.PlannedCluster) api.DesiredUpdate, hash func(api.PlannedCluster) string) []handOver {
	if hash == nil {
		hash = func(pc api.PlannedCluster) string { return hashOf(desired(pc)) }
	}
	var gate map[string]bool
	r.soakDue = time.Time{}
	r.markWindowOnly(plan, desired)
	if plan.Rollout != nil {
		sg := r.stage(plan, hashesOf(plan, hash), now)
		r.observeSoaks(plan, sg, now)
		gate, r.soakDue = sg.allowed, sg.soakDue
	}
	inflight := r.inflight(now)
	var out []handOver
	for _, pc := range plan.Clusters {
		if inflight >= window {
			break
		}
		e := r.Clusters[pc.Name]
		if pc.Paused || e != nil && e.Removing || gate != nil && !gate[pc.Name] || r.heldByWindow(pc.Name) {
			continue
		}
		h := hash(pc)
		if e != nil && e.Delivered != nil && e.Delivered.Hash == h {
			continue
		}
		up := desired(pc)
		r.Generation++
		up.Generation = r.Generation
		e = r.entry(pc.Name)
		e.Delivered = &delivery{Hash: h, Generation: up.Generation, At: now}
		if len(up.SyncWindows) > 0 {
			e.Delivered.Base = baseHash(up)
		}
		inflight++
		out = append(out, handOver{Cluster: pc.Name, Update: up, Running: e.Running})
	}
	return out
}

// markWindowOnly finds the closed clusters (r.closed) whose change is only their windows.
func (r *rollout) markWindowOnly(plan *api.Plan, desired func(api.PlannedCluster) api.DesiredUpdate) {
	r.windowOnly = map[string]bool{}
	for _, pc := range plan.Clusters {
		if _, closed := r.closed[pc.Name]; closed && onlyWindowsChanged(r.Clusters[pc.Name], desired(pc)) {
			r.windowOnly[pc.Name] = true
		}
	}
}

// heldByWindow says the cluster's sync windows are closed and its desired state changed beyond them.
func (r *rollout) heldByWindow(cluster string) bool {
	_, closed := r.closed[cluster]
	return closed && !r.windowOnly[cluster]
}

// baseHash identifies a desired state but for its sync windows.
func baseHash(up api.DesiredUpdate) string {
	up.SyncWindows = nil
	return hashOf(up)
}

// onlyWindowsChanged says the cluster was handed this desired state but for its sync windows.
func onlyWindowsChanged(e *clusterEntry, up api.DesiredUpdate) bool {
	if e == nil || e.Delivered == nil {
		return false
	}
	base := baseHash(up)
	return e.Delivered.Hash == base || e.Delivered.Base == base
}

// hashesOf identifies each planned cluster's desired state as a delivery records it.
func hashesOf(plan *api.Plan, hash func(api.PlannedCluster) string) map[string]string {
	hashes := make(map[string]string, len(plan.Clusters))
	for _, pc := range plan.Clusters {
		hashes[pc.Name] = hash(pc)
	}
	return hashes
}

// restartMissing takes the clusters whose workflow visibility lists as running: a planned cluster whose
// delivery was acknowledged but whose workflow no longer runs (terminated by hand, say) is delivered
// again, which starts it. Only acknowledged deliveries count: visibility lags a fresh start by a moment.
func (r *rollout) restartMissing(plan *api.Plan, running []string) []string {
	up := map[string]bool{}
	for _, c := range running {
		up[c] = true
	}
	var restarted []string
	for _, pc := range plan.Clusters {
		e := r.Clusters[pc.Name]
		if e != nil && e.Delivered != nil && e.Delivered.Acked && !up[pc.Name] {
			e.Delivered, e.Running = nil, false
			restarted = append(restarted, pc.Name)
		}
	}
	return restarted
}

func sortedKeys[V any](m map[string]V) []string { return workflow.DeterministicKeys(m) }
