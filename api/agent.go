package api

import (
	"encoding/json"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// Pull-mode agents (ADR 22). A cluster registered with an agent has no kubeconfig on the management side:
// its cluster workflows send the activities that touch the cluster (Observe, Apply, Uninstall) to the
// cluster's own task queue, which only that cluster's flotilla-agent polls. The management worker renders
// (ActivityPrepare) and keeps each rendering's package in its content store; the agent fetches a package
// by digest, in chunks, through ContentWorkflowType, so no payload carries more than ContentChunkSize.

// Activities and workflows of pull mode.
const (
	// ActivityPrepare renders every bundle of a ClusterTarget for an agent-mode cluster on the management
	// side and stores each rendering's package (PrepareInput → PrepareResult).
	ActivityPrepare = "Prepare"
	// ActivityReadContent reads chunks of stored packages on the management side (ReadContentInput → the
	// chunks' bytes, concatenated in order).
	ActivityReadContent = "ReadContent"
	// ContentWorkflowType is the short workflow an agent starts on the installation's task queue to fetch
	// chunks of packages (ReadContentInput → the chunks' bytes, concatenated in order).
	ContentWorkflowType = "ContentWorkflow"
)

// ActivityGrantRemoval grants an agent the removal of a GitRepo from its cluster (GrantRemovalInput → the
// grant); a local activity of the cluster workflow, on the management side, where the installation key is.
const ActivityGrantRemoval = "GrantRemoval"

// GrantRemovalInput is the removal to grant, as the agent will be asked it.
type GrantRemovalInput struct {
	Uninstall UninstallInput `json:"uninstall"`
}

// ContentChunkSize is the most one ContentWorkflow carries (the chunks of one or of many packages): far
// under Temporal's 2 MB payload limit, whatever the size of a release.
const ContentChunkSize = 512 << 10

// AgentTaskQueue is the task queue the agent of one cluster polls, for the installation on taskQueue:
// <taskQueue>-agent.<workspace>.<cluster> (workspace and cluster are DNS labels, so the name parses back).
func AgentTaskQueue(taskQueue, workspace, cluster string) string {
	return taskQueue + "-agent." + fleet.Workspace(workspace) + "." + cluster
}

// AgentIdentity is the Temporal worker identity an agent polls with: what `flotilla cluster list` shows of
// it (version and host) is read back from the task queue's pollers with ParseAgentIdentity.
func AgentIdentity(version, cluster, host string) string {
	return "flotilla-agent/" + version + " " + cluster + "@" + host
}

// ParseAgentIdentity is the version and host of an AgentIdentity; ok is false for any other identity.
func ParseAgentIdentity(id string) (version, host string, ok bool) {
	rest, found := strings.CutPrefix(id, "flotilla-agent/")
	if !found {
		return "", "", false
	}
	version, who, found := strings.Cut(rest, " ")
	if !found {
		return "", "", false
	}
	_, host, _ = strings.Cut(who, "@")
	return version, host, true
}

// PrepareInput asks for the renderings of a target's bundles on an agent-mode cluster.
type PrepareInput struct {
	Target ClusterTarget `json:"target"`
	// Generation is the cluster workflow's desired-state generation, which the grant covers.
	Generation int64 `json:"generation,omitempty"`
}

// PrepareResult is one PreparedBundle per bundle of the target, in its order.
type PrepareResult struct {
	Bundles []PreparedBundle `json:"bundles"`
	// Grant proves the renderings are the management side's (ADR 26): a MAC under the cluster's agent key
	// of the cluster, the GitRepo, the generation and the bundles. Empty when the installation has no key.
	Grant string `json:"grant,omitempty"`
}

// PreparedBundle is what an agent needs of one bundle's rendering: its summary (release name, namespace,
// deployment ID, options; no chart and no values) and the digest of its package, which the agent fetches
// only to apply. A bundle that did not render carries its error instead, typed as Observe types it.
type PreparedBundle struct {
	Bundle    string `json:"bundle"`
	Error     string `json:"error,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
	// Release is render's summary of the rendering (render.Release.MarshalSummary); the workflows pass it on
	// unread.
	Release json.RawMessage `json:"release,omitempty"`
	// Package is the digest ("sha256:<hex>") of the rendering's package in the management side's content
	// store, and PackageSize its length in bytes; empty for a bundle that deploys nothing.
	Package     string `json:"package,omitempty"`
	PackageSize int64  `json:"packageSize,omitempty"`
}

// ReadContentInput names chunks of packages, at most ContentChunkSize bytes in all, and how to make each
// package again on a worker that does not hold it (every worker of an installation can serve every chunk).
type ReadContentInput struct {
	// Target is the desired state the packages were rendered for.
	Target ClusterTarget  `json:"target"`
	Chunks []ContentChunk `json:"chunks"`
}

// ContentChunk is a byte range of one package, and the bundle of the target it is the rendering of.
type ContentChunk struct {
	Digest string `json:"digest"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	Bundle string `json:"bundle"`
}
