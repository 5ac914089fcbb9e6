package api

import (
	"strings"
	"time"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// Keeping the agent (ADR 23): once a pull-mode cluster's agent runs, Flotilla keeps the agent's own
// objects (its ServiceAccount, ClusterRoleBinding and Deployment) as a Helm release in that cluster,
// applied through the agent itself. One AgentWorkflow per agent-mode cluster reads the effective
// configuration on the management side (ActivityAgentDesired) and has the agent apply it (ActivityKeepAgent)
// only when the release records another configuration digest. Nothing of it carries a credential: the
// Temporal API key stays in the Secret the operator applied, which the kept release does not hold.

const (
	// AgentWorkflowType keeps one cluster's agent (AgentWorkflowInput; queries: QueryStatus → AgentStatus;
	// signal: SignalCheck, read the configuration and check the release now).
	AgentWorkflowType = "AgentWorkflow"
	// ActivityAgentDesired reads the cluster's agent configuration on the management side
	// (AgentDesiredInput → AgentDesired).
	ActivityAgentDesired = "AgentDesired"
	// ActivityKeepAgent runs in the agent: it installs or upgrades the agent's release when its recorded
	// digest is not the desired one (KeepAgentInput → KeepAgentResult).
	ActivityKeepAgent = "KeepAgent"

	// AgentReleaseName is the Helm release that holds the agent's objects, in the agent's namespace.
	AgentReleaseName = "flotilla-agent"
	// LabelAgentConfigDigest is the release label recording the configuration digest a revision holds
	// (AgentDigestLabel of it): the one thing compared to decide whether to apply.
	LabelAgentConfigDigest = "flotilla.dev/agent-config-digest"
)

// AgentDigestLabel is a configuration digest ("sha256:<hex>") as a label value, which may hold at most 63
// characters and no ':': its first 160 bits in hex, plenty to tell one configuration from another.
func AgentDigestLabel(digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	return hex[:min(len(hex), 40)]
}

// AgentWorkflowID is the AgentWorkflow of a cluster of the installation on taskQueue:
// agent/<workspace>/<cluster> on the default queue, agent/<taskQueue>/<workspace>/<cluster> on any other
// (installations share a namespace, ADR 13; the count of segments tells the forms apart).
func AgentWorkflowID(taskQueue, workspace, cluster string) string {
	if taskQueue == DefaultTaskQueue {
		return "agent/" + fleet.Workspace(workspace) + "/" + cluster
	}
	return "agent/" + taskQueue + "/" + fleet.Workspace(workspace) + "/" + cluster
}

// AgentWorkflowInput names the cluster whose agent is kept; Status carries what a run knew into the next
// (continue-as-new).
type AgentWorkflowInput struct {
	Workspace string       `json:"workspace,omitempty"`
	Cluster   string       `json:"cluster"`
	Status    *AgentStatus `json:"status,omitempty"`
}

// AgentStatus is what an AgentWorkflow answers to QueryStatus.
type AgentStatus struct {
	Workspace string `json:"workspace"`
	Cluster   string `json:"cluster"`
	// DesiredDigest is the digest of the effective configuration last read; AppliedDigest the one the
	// release recorded at the last check, and Revision that release's revision.
	DesiredDigest string `json:"desiredDigest,omitempty"`
	AppliedDigest string `json:"appliedDigest,omitempty"`
	Revision      int    `json:"revision,omitempty"`
	// LastApplied is when a check last installed or upgraded the release; LastChecked when a check last
	// ended, applying or not; Checks counts them.
	LastApplied time.Time `json:"lastApplied,omitempty"`
	LastChecked time.Time `json:"lastChecked,omitempty"`
	Checks      int       `json:"checks"`
	// Error is why the last check failed (the agent did not pick it up, the release could not be applied).
	Error string `json:"error,omitempty"`
}

// AgentDesiredInput names the cluster whose agent configuration is read.
type AgentDesiredInput struct {
	Workspace string `json:"workspace,omitempty"`
	Cluster   string `json:"cluster"`
}

// AgentDesired is a cluster's agent as the management side wants it. Keep is false when there is nothing
// to keep (the cluster left the inventory or agent mode), and Reason says which.
type AgentDesired struct {
	Keep   bool   `json:"keep"`
	Reason string `json:"reason,omitempty"`
	// Namespace is the agent's namespace, where its release lives; Digest the effective configuration's
	// digest; Manifests the kept objects as YAML, without the Secret and without any credential.
	Namespace string `json:"namespace,omitempty"`
	Digest    string `json:"digest,omitempty"`
	Manifests string `json:"manifests,omitempty"`
	// Grant proves the release the management side's (ADR 26); empty when the installation has no key.
	Grant string `json:"grant,omitempty"`
}

// KeepAgentInput is what the agent applies to keep itself: AgentDesired's objects for its own cluster.
type KeepAgentInput struct {
	Workspace string `json:"workspace,omitempty"`
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Digest    string `json:"digest"`
	Manifests string `json:"manifests"`
	Grant     string `json:"grant,omitempty"`
}

// KeepAgentResult says whether the check applied, and the release's revision and digest after it.
type KeepAgentResult struct {
	Applied  bool   `json:"applied"`
	Revision int    `json:"revision"`
	Digest   string `json:"digest"`
}
