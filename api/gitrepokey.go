package api

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// A GitRepo's namespace is its workspace, as in Fleet: clusters and cluster groups are registered into
// one, and a GitRepo targets only the clusters of its own (ADR 14). GitRepo and cluster names are DNS
// labels, unique within a namespace; two namespaces may each have a GitRepo "web".

// DefaultNamespace is the workspace of a GitRepo, cluster or group that names none: Fleet's fleet-default.
// Everything Flotilla ran before workspaces existed is in it.
const DefaultNamespace = fleet.DefaultNamespace

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// CheckNamespace accepts a namespace that is a DNS label, as Kubernetes namespaces are. It goes into
// workflow IDs (gitrepo/<namespace>/<name>), release labels and quoted visibility queries, so anything
// else is refused rather than escaped.
func CheckNamespace(ns string) error {
	if !dnsLabel.MatchString(ns) || len(ns) > 63 {
		return fmt.Errorf("namespace %q: must be a DNS label (lowercase letters, digits, '-'; at most 63 characters)", ns)
	}
	return nil
}

// GitRepoKey is a GitRepo's identity: its namespace and its name. Workflow IDs, release ownership, search
// attributes and status are keyed by it. Namespace is never empty in a key made by KeyOf.
type GitRepoKey struct {
	Namespace string
	Name      string
}

// KeyOf is the key of the GitRepo name in namespace; an empty namespace is DefaultNamespace, as payloads
// and release labels written before workspaces existed (and every fleet-default one since) leave it empty.
func KeyOf(namespace, name string) GitRepoKey {
	return GitRepoKey{Namespace: fleet.Workspace(namespace), Name: name}
}

// IsDefault reports whether the GitRepo is in fleet-default, whose IDs and payloads are those of the
// GitRepos before workspaces existed.
func (k GitRepoKey) IsDefault() bool { return k.Namespace == "" || k.Namespace == DefaultNamespace }

// PayloadNamespace is the namespace as payloads and release labels carry it: empty for fleet-default, so
// that what a fleet-default GitRepo sends and writes is byte for byte what it did before workspaces.
func (k GitRepoKey) PayloadNamespace() string {
	if k.IsDefault() {
		return ""
	}
	return k.Namespace
}

// String is how messages and logs name the GitRepo: its name in fleet-default, as they always did, and
// namespace/name in any other workspace.
func (k GitRepoKey) String() string { return fleet.DisplayName(k.Namespace, k.Name) }

// Qualified is namespace/name in every workspace, for a message that compares GitRepos of two.
func (k GitRepoKey) Qualified() string { return fleet.Workspace(k.Namespace) + "/" + k.Name }

// WorkflowID is the workflow ID of the GitRepo: gitrepo/<name> in fleet-default, as before workspaces, so
// running GitRepos keep their IDs, and gitrepo/<namespace>/<name> in any other. Names and namespaces are
// DNS labels without '/', so the count of segments alone tells the forms apart: no GitRepo of one
// workspace, and none of their cluster workflows (ClusterWorkflowID), can take an ID of another.
func (k GitRepoKey) WorkflowID() string {
	if k.IsDefault() {
		return "gitrepo/" + k.Name
	}
	return "gitrepo/" + k.Namespace + "/" + k.Name
}

// ClusterWorkflowID is the workflow ID of the GitRepo's workflow on one of its workspace's clusters.
func (k GitRepoKey) ClusterWorkflowID(cluster string) string {
	return k.WorkflowID() + "/cluster/" + cluster
}

// ParseGitRepoWorkflowID is the key of a GitRepo workflow ID, or false when id is no GitRepo's (a cluster
// workflow's, the inventory's).
func ParseGitRepoWorkflowID(id string) (GitRepoKey, bool) {
	parts := strings.Split(id, "/")
	if parts[0] != "gitrepo" {
		return GitRepoKey{}, false
	}
	switch {
	case len(parts) == 2 && parts[1] != "":
		return KeyOf("", parts[1]), true
	case len(parts) == 3 && parts[1] != "" && parts[2] != "":
		return KeyOf(parts[1], parts[2]), true
	}
	return GitRepoKey{}, false
}

// ParseClusterWorkflowID is the GitRepo key and the cluster of a cluster workflow ID, or false when id is
// no cluster workflow's.
func ParseClusterWorkflowID(id string) (GitRepoKey, string, bool) {
	parts := strings.Split(id, "/")
	n := len(parts)
	if n < 4 || parts[n-2] != "cluster" || parts[n-1] == "" {
		return GitRepoKey{}, "", false
	}
	k, ok := ParseGitRepoWorkflowID(strings.Join(parts[:n-2], "/"))
	return k, parts[n-1], ok
}

// ReleaseOwner is the GitRepo a release's labels name as its owner; Name is empty when the release was
// not installed by Flotilla. A release without LabelGitRepoNamespace is fleet-default's: every release
// written before workspaces existed, and every fleet-default one since.
func ReleaseOwner(labels map[string]string) GitRepoKey {
	return KeyOf(labels[LabelGitRepoNamespace], labels[LabelGitRepo])
}

// OwnerLabels are the release labels naming the GitRepo as owner: the namespace label only outside
// fleet-default (ReleaseOwner).
func (k GitRepoKey) OwnerLabels() map[string]string {
	l := map[string]string{LabelGitRepo: k.Name}
	if ns := k.PayloadNamespace(); ns != "" {
		l[LabelGitRepoNamespace] = ns
	}
	return l
}
