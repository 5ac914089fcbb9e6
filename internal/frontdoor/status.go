package frontdoor

import (
	"fmt"
	"sort"

	"github.com/flotilla-gitops/flotilla/api"
)

// Condition is Fleet's genericcondition: what `kubectl wait --for=condition=Ready` reads.
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	LastUpdateTime     string `json:"lastUpdateTime,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime,omitempty"`
}

// Summary is Fleet's BundleSummary: counts of bundle deployments by state and the first non-ready ones.
type Summary struct {
	NotReady          int                `json:"notReady,omitempty"`
	WaitApplied       int                `json:"waitApplied,omitempty"`
	ErrApplied        int                `json:"errApplied,omitempty"`
	OutOfSync         int                `json:"outOfSync,omitempty"`
	Modified          int                `json:"modified,omitempty"`
	Ready             int                `json:"ready"`
	Pending           int                `json:"pending,omitempty"`
	DesiredReady      int                `json:"desiredReady"`
	NonReadyResources []NonReadyResource `json:"nonReadyResources,omitempty"`
}

// NonReadyResource is one bundle deployment that is not Ready, named cluster/bundle.
type NonReadyResource struct {
	Name        string `json:"name"`
	BundleState string `json:"bundleState"`
	Message     string `json:"message,omitempty"`
}

// Display is what Fleet's printer columns and UIs read.
type Display struct {
	ReadyBundleDeployments string `json:"readyBundleDeployments"`
	State                  string `json:"state,omitempty"`
	Message                string `json:"message,omitempty"`
	Error                  bool   `json:"error,omitempty"`
}

// Status is a GitRepo's or HelmOp's status in Fleet's shape (StatusBase plus GitRepo's own fields).
type Status struct {
	ObservedGeneration       int64                         `json:"observedGeneration"`
	Commit                   string                        `json:"commit,omitempty"`
	Version                  string                        `json:"version,omitempty"`
	ReadyClusters            int                           `json:"readyClusters"`
	DesiredReadyClusters     int                           `json:"desiredReadyClusters"`
	Summary                  Summary                       `json:"summary"`
	Display                  Display                       `json:"display"`
	ResourceCounts           api.ResourceCounts            `json:"resourceCounts"`
	PerClusterResourceCounts map[string]api.ResourceCounts `json:"perClusterResourceCounts,omitempty"`
	Conditions               []Condition                   `json:"conditions"`
}

// maxNonReady is Fleet's cap on the non-ready resources a summary lists.
const maxNonReady = 10

// Refused is the status of an object Flotilla will not run: the reason in Accepted, Ready and Stalled.
func Refused(generation int64, reason, message string, old []Condition, now string) Status {
	return Status{
		ObservedGeneration: generation,
		Display:            Display{ReadyBundleDeployments: "0/0", State: "ErrApplied", Message: message, Error: true},
		Conditions: mergeConditions(old, now,
			Condition{Type: "Accepted", Status: "False", Reason: reason, Message: message},
			Condition{Type: "Ready", Status: "False", Reason: reason, Message: message},
			Condition{Type: "Stalled", Status: "True", Reason: reason, Message: message}),
	}
}

// FromGitRepo is the Fleet status of a running GitRepo: every (cluster, bundle) is one of Fleet's bundle
// deployments, counted by state; Ready when every one is. The counts are the workflow's own aggregate,
// whole at any size, while a status answer too large for one query lists only some clusters or leaves
// their bundles out: those give the non-ready examples and per-cluster counts. old keeps each condition's
// transition time.
func FromGitRepo(st api.GitRepoStatus, generation int64, old []Condition, now string) Status {
	s := Status{ObservedGeneration: generation, Commit: st.Commit, ResourceCounts: st.ResourceCounts,
		ReadyClusters: st.ReadyClusters, DesiredReadyClusters: st.DesiredReadyClusters,
		Summary: Summary{Ready: st.Summary.Ready, NotReady: st.Summary.NotReady, WaitApplied: st.Summary.WaitApplied,
			ErrApplied: st.Summary.ErrApplied, OutOfSync: st.Summary.OutOfSync, Modified: st.Summary.Modified,
			Pending: st.Summary.Pending, DesiredReady: st.Summary.DesiredReady}}
	clusters := append([]api.ClusterStatus(nil), st.Clusters...)
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Name < clusters[j].Name })
	for _, c := range clusters {
		if len(c.Bundles) > 0 || c.ResourceCounts != (api.ResourceCounts{}) {
			if s.PerClusterResourceCounts == nil {
				s.PerClusterResourceCounts = map[string]api.ResourceCounts{}
			}
			s.PerClusterResourceCounts[clusterID(st.Namespace, c.Name)] = c.ResourceCounts
		}
		if len(c.Bundles) == 0 && c.State != api.StateReady && len(s.Summary.NonReadyResources) < maxNonReady {
			s.Summary.NonReadyResources = append(s.Summary.NonReadyResources, NonReadyResource{Name: c.Name, BundleState: c.State, Message: c.Message})
		}
		for _, b := range c.Bundles {
			if b.State != api.StateReady && len(s.Summary.NonReadyResources) < maxNonReady {
				s.Summary.NonReadyResources = append(s.Summary.NonReadyResources,
					NonReadyResource{Name: c.Name + "/" + b.Name, BundleState: b.State, Message: b.Message})
			}
			if s.Version == "" && b.ChartVersion != "" {
				s.Version = b.ChartVersion
			}
		}
	}
	worst := st.State
	if worst == api.StateReady {
		worst = ""
	}
	s.Display = Display{ReadyBundleDeployments: fmt.Sprintf("%d/%d", s.Summary.Ready, s.Summary.DesiredReady), State: worst}
	allReady := st.Error == "" && st.Commit != "" && s.Summary.Ready == s.Summary.DesiredReady && st.ReadyClusters == st.DesiredReadyClusters
	ready := Condition{Type: "Ready", Status: "True"}
	stalled := Condition{Type: "Stalled", Status: "False"}
	switch {
	case st.Error != "":
		s.Display.Message, s.Display.Error = st.Error, true
		ready = Condition{Type: "Ready", Status: "False", Reason: "Error", Message: st.Error}
		stalled = Condition{Type: "Stalled", Status: "True", Reason: "Error", Message: st.Error}
	case !allReady:
		s.Display.Message = st.Message
		ready = Condition{Type: "Ready", Status: "False", Reason: notReadyReason(worst), Message: st.Message}
	}
	s.Conditions = mergeConditions(old, now, Condition{Type: "Accepted", Status: "True"}, ready, stalled)
	return s
}

func notReadyReason(worst string) string {
	if worst == "" {
		return "Pending"
	}
	return worst
}

func clusterID(ns, cluster string) string {
	if ns == "" {
		ns = "fleet-default"
	}
	return ns + "/" + cluster
}

// mergeConditions sets each condition, keeping its transition time while its status stays, and the
// update time while nothing of it changes, so an unchanged status writes nothing.
func mergeConditions(old []Condition, now string, set ...Condition) []Condition {
	out := make([]Condition, 0, len(set))
	for _, c := range set {
		c.LastUpdateTime, c.LastTransitionTime = now, now
		for _, o := range old {
			if o.Type != c.Type {
				continue
			}
			if o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
				if o.Reason == c.Reason && o.Message == c.Message {
					c.LastUpdateTime = o.LastUpdateTime
				}
			}
		}
		out = append(out, c)
	}
	return out
}
