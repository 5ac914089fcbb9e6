package workflows

import (
	"fmt"
	"strings"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
)

// A rolloutStrategy's partitions, decided as Fleet's UpdatePartitions decides them
// (rancher/fleet internal/cmd/controller/target/rollout.go), for the unit Flotilla hands over: a
// cluster's desired state, every bundle of the GitRepo together (ADR 30).
//
// Partitions are walked in order. In each, a cluster whose desired state changed is handed it when it
// has nothing of the GitRepo yet (at most maxNew of those), when it is unavailable already (updating it
// costs nothing), or while fewer than maxUnavailable clusters of the GitRepo and of the partition are
// unavailable. A partition with more unavailable clusters (not running the desired state, or not Ready)
// than its maxUnavailable is unavailable; once more partitions are unavailable than
// maxUnavailablePartitions, later partitions wait and keep what they run.
//
// One departure: a budget of 0 still lets one cluster at a time be updated. Fleet's code never updates an
// available cluster then, and a rollout with maxUnavailable 0 stands still forever; what its author
// means is "one at a time, and none may stay unavailable".

// staging is what a rolloutStrategy allows now.
type staging struct {
	// allowed are the clusters that may be handed their changed desired state now.
	allowed map[string]bool
	// held says, for a cluster whose desired state changed but which is not allowed, what it waits for.
	held   map[string]string
	status api.RolloutStatus
	// soaked are the done partitions with a soak time, whose clusters are all Ready now; soakDue is the
	// earliest moment a soak still running ends.
	soaked  []string
	soakDue time.Time
}

// memberClass is where one cluster of a partition stands against its desired state.
type memberClass int

const (
	memberDone     memberClass = iota // runs the desired state, Ready
	memberOnItsWay                    // being handed it, or applying it
	memberFailing                     // applied it, and is not Ready
	memberHeld                        // not handed it: budget, maxNew, paused
)

// hasDeployment says a cluster has something of the GitRepo: a hand-over was made, or its workflow runs.
func hasDeployment(e *clusterEntry) bool { return e != nil && (e.Delivered != nil || e.Running) }

// applied says the cluster reported on the desired state it was last handed.
func applied(e *clusterEntry) bool {
	return e.Delivered != nil && e.Delivered.Acked && e.Status != nil && e.Status.Generation >= e.Delivered.Generation
}

// unavailable is Fleet's isUnavailable: a cluster that has something of the GitRepo and has not applied
// what it was last handed, or is not Ready. A cluster with nothing yet is not counted.
func unavailable(e *clusterEntry) bool {
	return hasDeployment(e) && !(applied(e) && e.Status.Reachable && e.Status.State == api.StateReady)
}

// stage decides, for a plan with a rollout, which clusters may be handed their desired state now; hashes
// are the planned clusters' desired-state hashes. A paused rollout, or an aborted commit, hands nothing
// over; a done partition whose gate is closed (approval, soak) holds the partitions after it.
func (r *rollout) stage(plan *api.Plan, hashes map[string]string, now time.Time) staging {
	rp := plan.Rollout
	out := staging{allowed: map[string]bool{}, held: map[string]string{}}
	members := make([][]int, len(rp.Partitions))
	global := 0
	for i, pc := range plan.Clusters {
		p := min(max(pc.Partition, 0), len(rp.Partitions)-1)
		members[p] = append(members[p], i)
		if unavailable(r.Clusters[pc.Name]) {
			global++
		}
	}
	st := api.RolloutStatus{MaxUnavailable: rp.MaxUnavailable, MaxUnavailablePartitions: rp.MaxUnavailablePartitions, Partitions: []api.PartitionStatus{}}
	handed := func(e *clusterEntry, hash string) bool {
		return e != nil && e.Delivered != nil && e.Delivered.Hash == hash
	}
	// stop is why nothing is handed over (a pause, an abort); blockedBy why the clusters of later
	// partitions wait, once a partition or its gate holds them.
	stop, blockedBy := r.stopped(plan.Commit, &st), ""
	newCount := 0
	for pi, part := range rp.Partitions {
		ps := api.PartitionStatus{Name: part.Name, Count: len(members[pi]), MaxUnavailable: part.MaxUnavailable, Clusters: []string{},
			Approval: part.Approval, Soak: part.Soak, ApprovedBy: r.approval(plan.Commit, part.Name)}
		inPartition := 0
		for _, i := range members[pi] {
			if unavailable(r.Clusters[plan.Clusters[i].Name]) {
				inPartition++
			}
		}
		blocked := blockedBy != ""
		for _, i := range members[pi] {
			pc := plan.Clusters[i]
			e, hash := r.Clusters[pc.Name], hashes[pc.Name]
			if pc.Paused || e != nil && e.Removing || handed(e, hash) {
				continue
			}
			_, pinned := r.ungated[pc.Name]
			switch {
			case pinned:
				out.allowed[pc.Name] = true
			case r.heldByWindow(pc.Name):
				out.held[pc.Name] = r.closed[pc.Name]
			case blocked:
				out.held[pc.Name] = blockedBy
			case stop != "":
				out.held[pc.Name] = stop
			case !hasDeployment(e) && newCount >= rp.MaxNew:
				out.held[pc.Name] = fmt.Sprintf("waits: at most %d clusters get the GitRepo first at once (maxNew)", rp.MaxNew)
			case !hasDeployment(e):
				newCount++
				out.allowed[pc.Name] = true
			case unavailable(e):
				out.allowed[pc.Name] = true
			case global < max(rp.MaxUnavailable, 1) && inPartition < max(part.MaxUnavailable, 1):
				global++
				inPartition++
				out.allowed[pc.Name] = true
			default:
				out.held[pc.Name] = fmt.Sprintf("waits for maxUnavailable (%d clusters, %d in partition %q)", rp.MaxUnavailable, part.MaxUnavailable, part.Name)
			}
		}
		count := map[memberClass]int{}
		var why []string
		for _, i := range members[pi] {
			pc := plan.Clusters[i]
			e, hash := r.Clusters[pc.Name], hashes[pc.Name]
			ps.Clusters = append(ps.Clusters, pc.Name)
			class := classify(e, handed(e, hash), out.allowed[pc.Name])
			count[class]++
			if class != memberDone {
				ps.Unavailable++
				ps.UnavailableClusters = append(ps.UnavailableClusters, pc.Name)
				why = append(why, memberWhy(pc, e, class, out.held[pc.Name]))
			}
		}
		over := ps.Unavailable > ps.MaxUnavailable
		switch {
		case blocked && ps.Unavailable > 0 && count[memberOnItsWay] == 0:
			ps.State = api.PartitionWaiting
		case count[memberOnItsWay] > 0:
			ps.State = api.PartitionRollingOut
		case over && count[memberFailing] > 0:
			ps.State = api.PartitionHalted
		case count[memberHeld] > 0 && stop != "":
			ps.State = api.PartitionWaiting
		case count[memberHeld] > 0:
			ps.State = api.PartitionRollingOut
		default:
			ps.State = api.PartitionDone
		}
		if blocked {
			st.Partitions = append(st.Partitions, ps)
			continue
		}
		if over {
			st.UnavailablePartitions++
			if st.UnavailablePartitions > rp.MaxUnavailablePartitions {
				blockedBy = fmt.Sprintf("waits for partition %q", part.Name)
				if ps.State == api.PartitionHalted {
					st.Halted = part.Name
					st.Message = fmt.Sprintf("rollout halted at partition %q (%d of %d): %d of %d clusters unavailable, %d allowed: %s",
						ps.Name, pi+1, len(rp.Partitions), ps.Unavailable, ps.Count, ps.MaxUnavailable, firstOf(why, 5))
				}
			}
		}
		if ps.State == api.PartitionDone && blockedBy == "" {
			blockedBy = r.gate(plan.Commit, part, &ps, &st, &out, now)
		}
		st.Partitions = append(st.Partitions, ps)
	}
	st.Unavailable = global
	if st.Message == "" {
		st.Message = progressMessage(st)
	}
	if stop != "" {
		st.Message = stop + "; " + st.Message
	}
	out.status = st
	return out
}

// classify places a cluster of a partition: handed says it was handed the desired state, allowed that it
// is being handed it now.
func classify(e *clusterEntry, handed, allowed bool) memberClass {
	switch {
	case allowed:
		return memberOnItsWay
	case !handed:
		return memberHeld
	case !applied(e) || e.Status.State == api.StateWaitApplied:
		return memberOnItsWay
	case e.Status.Reachable && e.Status.State == api.StateReady:
		return memberDone
	default:
		return memberFailing
	}
}

// progressMessage says where a rollout that is not halted stands.
func progressMessage(st api.RolloutStatus) string {
	for i, ps := range st.Partitions {
		switch ps.State {
		case api.PartitionAwaitingApproval:
			return fmt.Sprintf("partition %q (%d of %d) is done and waits for approval (flotilla rollout approve)", ps.Name, i+1, len(st.Partitions))
		case api.PartitionSoaking:
			return fmt.Sprintf("partition %q (%d of %d) is done and soaks until %s", ps.Name, i+1, len(st.Partitions), ps.SoakUntil.UTC().Format(time.TimeOnly+" UTC"))
		}
		if ps.State != api.PartitionDone {
			return fmt.Sprintf("rolling out partition %q (%d of %d): %d of %d clusters unavailable, %d allowed",
				ps.Name, i+1, len(st.Partitions), ps.Unavailable, ps.Count, ps.MaxUnavailable)
		}
	}
	return fmt.Sprintf("rolled out through %d partitions", len(st.Partitions))
}

// memberWhy says why a cluster of a partition counts as unavailable: what it waits for, or its state and
// message from its last report.
func memberWhy(pc api.PlannedCluster, e *clusterEntry, class memberClass, held string) string {
	prefix := fmt.Sprintf("cluster %q: ", pc.Name)
	switch {
	case pc.Paused:
		return prefix + "paused"
	case class == memberHeld && held != "":
		return prefix + held
	case class == memberHeld:
		return prefix + "not handed the desired state yet"
	case class == memberOnItsWay:
		return prefix + "applying"
	case e.Status.Message == "":
		return prefix + e.Status.State
	}
	return prefix + e.Status.State + ": " + strings.TrimPrefix(e.Status.Message, prefix)
}

// firstOf joins up to n items, saying how many more there are.
func firstOf(items []string, n int) string {
	if len(items) > n {
		return strings.Join(items[:n], "; ") + fmt.Sprintf("; and %d more", len(items)-n)
	}
	return strings.Join(items, "; ")
}
