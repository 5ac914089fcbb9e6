package api

import (
	"time"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// Activity inputs and results are references and small summaries: rendered manifests, chart bytes and
// kubeconfig contents never travel through Temporal (payload limits, and credentials must stay out of
// history).

// BundleRef names a bundle folder in the repository.
type BundleRef struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// Charts are the bundle's chart sources that are not folders of the repository (helm.repo, a chart
	// URL, oci://) and the Chart.yaml dependencies of its charts, as the plan resolved them.
	Charts []ChartLock `json:"charts,omitempty"`
	// DependsOn is the bundle's fleet.yaml dependsOn, resolved by the plan against the GitRepo's bundles.
	DependsOn []Dependency `json:"dependsOn,omitempty"`
	// DependsOnError says why the bundle is never applied: it is part of a dependsOn cycle, which the
	// message names.
	DependsOnError string `json:"dependsOnError,omitempty"`
}

// Dependency is one dependsOn entry of a bundle, resolved by the plan: on each cluster the bundle is
// installed or upgraded only once at least one of Bundles is deployed there and every one of them that
// is deployed there is in one of AcceptedStates (Ready when empty), as Fleet's agent checks the bundle
// deployments of its cluster. An entry that matches no bundle holds the bundle back everywhere.
type Dependency struct {
	// Name and Selector are the entry as written, for messages (Selector in kubectl's form, tier=db).
	Name     string `json:"name,omitempty"`
	Selector string `json:"selector,omitempty"`
	// Bundles are the GitRepo's bundles the entry matches, sorted.
	Bundles        []string `json:"bundles,omitempty"`
	AcceptedStates []string `json:"acceptedStates,omitempty"`
}

// PollInput is the input of ActivityPoll: which commit should a GitRepo deploy now?
type PollInput struct {
	GitRepo          string `json:"gitRepo"`
	Repo             string `json:"repo"`
	Branch           string `json:"branch,omitempty"`
	Revision         string `json:"revision,omitempty"`
	ClientSecretName string `json:"clientSecretName,omitempty"`
	// Namespace is the GitRepo's workspace (GitRepoKey.PayloadNamespace): the leaving clusters it reads are
	// that workspace's.
	Namespace string `json:"namespace,omitempty"`
	// HelmOp is the fleet.yaml of the one bundle of a HelmOp, which has no repository (fleet.HelmOp).
	HelmOp *fleet.FleetYAML `json:"helmOp,omitempty"`
	// CABundle and InsecureSkipTLSVerify are the GitRepo's TLS settings for an HTTPS repository (no
	// secrets: a CA certificate is public).
	CABundle              []byte `json:"caBundle,omitempty"`
	InsecureSkipTLSVerify bool   `json:"insecureSkipTLSVerify,omitempty"`
}

// Key is the GitRepo that polls.
func (in PollInput) Key() GitRepoKey { return KeyOf(in.Namespace, in.GitRepo) }

// PollResult is the result of ActivityPoll: the commit to deploy and the inventory generation, so the
// workflow re-plans only on change.
type PollResult struct {
	Commit              string `json:"commit"`
	InventoryGeneration int64  `json:"inventoryGeneration"`
	// Leaving are the clusters of that inventory on their way out: the GitRepo stops targeting them at
	// once, whatever its plan (ADR 16).
	Leaving []LeavingCluster `json:"leaving,omitempty"`
}

// LeavingCluster is a registered cluster on its way out of the inventory (`flotilla cluster remove`,
// ADR 16): no GitRepo targets it, and each GitRepo that ran on it uninstalls from it, or with
// KeepWorkloads only forgets it and leaves its releases and objects in place.
type LeavingCluster struct {
	Name          string `json:"name"`
	KeepWorkloads bool   `json:"keepWorkloads,omitempty"`
}

// PlanInput is the input of ActivityPlan: the bundles of a commit and the clusters each one targets.
type PlanInput struct {
	GitRepo          string            `json:"gitRepo"`
	Repo             string            `json:"repo"`
	Commit           string            `json:"commit"`
	ClientSecretName string            `json:"clientSecretName,omitempty"`
	Paths            []string          `json:"paths,omitempty"`
	Targets          []fleet.GitTarget `json:"targets,omitempty"`
	// Namespace is the GitRepo's (GitRepoKey.PayloadNamespace: empty in fleet-default): only the clusters
	// and groups of that workspace are planned.
	Namespace string `json:"namespace,omitempty"`
	// CABundle and InsecureSkipTLSVerify are the GitRepo's TLS settings, as in PollInput.
	CABundle              []byte `json:"caBundle,omitempty"`
	InsecureSkipTLSVerify bool   `json:"insecureSkipTLSVerify,omitempty"`
	// ChartAccess says how the bundles' remote charts are fetched when the plan resolves them.
	ChartAccess *ChartAccess `json:"chartAccess,omitempty"`
	// HelmOp is the fleet.yaml of the one bundle of a HelmOp, which has no repository (fleet.HelmOp).
	HelmOp *fleet.FleetYAML `json:"helmOp,omitempty"`
	// SyncWindows are the GitRepo's: the plan says which of those with cluster criteria choose each cluster.
	SyncWindows []fleet.SyncWindow `json:"syncWindows,omitempty"`
	// Pack asks for the clusters compressed (Plan.ClustersZ) when they are many (Plan.Pack); a workflow
	// that cannot read them never asks.
	Pack bool `json:"pack,omitempty"`
}

// Key is the GitRepo that plans.
func (in PlanInput) Key() GitRepoKey { return KeyOf(in.Namespace, in.GitRepo) }

// Plan is the result of ActivityPlan: discovery and targeting of one commit against the current
// inventory. The GitRepo workflow carries its last good plan across continue-as-new.
type Plan struct {
	Commit              string      `json:"commit"`
	InventoryGeneration int64       `json:"inventoryGeneration"`
	Bundles             []BundleRef `json:"bundles"`
	// Clusters are the targeted clusters, sorted by name; each lists indexes into Bundles.
	Clusters []PlannedCluster `json:"clusters"`
	// ClustersZ holds Clusters gzip-compressed instead, when PlanInput.Pack asked and they are many
	// (Plan.Pack, Plan.Unpack).
	ClustersZ []byte `json:"clustersZ,omitempty"`
	// Unloaded are the indexes of bundles whose fleet.yaml does not load: their own targets are unknown.
	Unloaded []int `json:"unloaded,omitempty"`
	// Warnings name fleet.yaml keys Fleet documents that Flotilla does not act on (file, line, key).
	Warnings []string `json:"warnings,omitempty"`
	// Leaving are the clusters of the inventory on their way out; Clusters has none of them.
	Leaving []LeavingCluster `json:"leaving,omitempty"`
	// Rollout is the rolloutStrategy the clusters are rolled out with, applied to them (fleet/rollout); nil
	// when no bundle declares one, and then a changed cluster is handed its desired state as soon as the
	// rollout window allows.
	Rollout *RolloutPlan `json:"rollout,omitempty"`
}

// RolloutPlan is a rolloutStrategy applied to a plan's clusters: budgets as counts, and the partitions in
// rollout order (each PlannedCluster names its own).
type RolloutPlan struct {
	MaxUnavailable           int             `json:"maxUnavailable"`
	MaxUnavailablePartitions int             `json:"maxUnavailablePartitions"`
	MaxNew                   int             `json:"maxNew"`
	Partitions               []PartitionPlan `json:"partitions"`
}

// PartitionPlan is one partition of a RolloutPlan, with its gate (fleet.PartitionGate).
type PartitionPlan struct {
	Name           string        `json:"name"`
	MaxUnavailable int           `json:"maxUnavailable"`
	Approval       bool          `json:"approval,omitempty"`
	Soak           time.Duration `json:"soak,omitempty"`
}

// PlannedCluster is one targeted cluster and the bundles it receives.
type PlannedCluster struct {
	Name    string `json:"name"`
	Bundles []int  `json:"bundles"`
	// Digest changes whenever the cluster's inventory entry (labels, values, kubeconfig reference) changes.
	Digest string `json:"digest"`
	Paused bool   `json:"paused,omitempty"`
	// Agent is true for a cluster registered in pull mode (fleet.ClusterSpec.Agent).
	Agent bool `json:"agent,omitempty"`
	// Partition is the index of the cluster's partition in Plan.Rollout.
	Partition int `json:"partition,omitempty"`
	// Windows are the indexes of the GitRepo's sync windows with cluster criteria that choose this
	// cluster (windows without criteria apply to every cluster).
	Windows []int `json:"windows,omitempty"`
}

// DeployOptions are the GitRepo-level options a cluster workflow applies bundles with.
type DeployOptions struct {
	TargetNamespace     string              `json:"targetNamespace,omitempty"`
	KeepResources       bool                `json:"keepResources,omitempty"`
	CorrectDrift        *fleet.CorrectDrift `json:"correctDrift,omitempty"`
	ForceSyncGeneration int64               `json:"forceSyncGeneration,omitempty"`
}

// ClusterTarget is what one cluster should run for one GitRepo.
type ClusterTarget struct {
	GitRepo          string        `json:"gitRepo"`
	Cluster          string        `json:"cluster"`
	ClusterDigest    string        `json:"clusterDigest"`
	Repo             string        `json:"repo"`
	Commit           string        `json:"commit"`
	ClientSecretName string        `json:"clientSecretName,omitempty"`
	Bundles          []BundleRef   `json:"bundles"`
	Options          DeployOptions `json:"options"`
	// Namespace is the GitRepo's, and so the cluster's (GitRepoKey.PayloadNamespace: empty in
	// fleet-default, so a fleet-default target encodes as it did before workspaces).
	Namespace string `json:"namespace,omitempty"`
	// CABundle and InsecureSkipTLSVerify are the GitRepo's TLS settings, as in PollInput: a worker without
	// the commit checked out clones it.
	CABundle              []byte `json:"caBundle,omitempty"`
	InsecureSkipTLSVerify bool   `json:"insecureSkipTLSVerify,omitempty"`
	// ChartAccess says how the bundles' remote charts are fetched (besides CABundle and
	// InsecureSkipTLSVerify, which apply to them too, as in Fleet).
	ChartAccess *ChartAccess `json:"chartAccess,omitempty"`
	// HelmOp is the fleet.yaml of the one bundle of a HelmOp, which has no repository (fleet.HelmOp).
	HelmOp *fleet.FleetYAML `json:"helmOp,omitempty"`
	// Agent routes the cluster-side activities to the cluster's agent (AgentTaskQueue): the cluster is
	// registered in pull mode and the management side cannot reach it.
	Agent bool `json:"agent,omitempty"`
}

// ChartAccessOf is how a GitRepo's remote charts are fetched, nil when its spec says nothing of it.
func ChartAccessOf(s fleet.GitRepoSpec) *ChartAccess {
	if s.HelmSecretName == "" && s.HelmRepoURLRegex == "" {
		return nil
	}
	return &ChartAccess{SecretName: s.HelmSecretName, URLRegex: s.HelmRepoURLRegex, PassCredentials: s.HelmPassCredentials}
}

// ChartAccess is how a GitRepo's remote charts and chart dependencies are fetched: the name of the
// credentials the worker's store holds for them (never their content), and the URLs those may be sent to.
type ChartAccess struct {
	// SecretName is the GitRepo's helmSecretName.
	SecretName string `json:"secretName,omitempty"`
	// URLRegex is the GitRepo's helmRepoURLRegex: when set, only chart URLs it matches get the credentials.
	URLRegex string `json:"urlRegex,omitempty"`
	// PassCredentials is the GitRepo's helmPassCredentials: the credentials may go to every https origin,
	// not only the chart source's own.
	PassCredentials bool `json:"passCredentials,omitempty"`
}

// Key is the GitRepo the target is of.
func (t ClusterTarget) Key() GitRepoKey { return KeyOf(t.Namespace, t.GitRepo) }

// ObserveInput is the input of ActivityObserve: the desired and live state of every bundle of a
// ClusterTarget.
type ObserveInput struct {
	Target ClusterTarget `json:"target"`
	// Resources also reads every object the releases own (readiness, missing, modified).
	Resources bool `json:"resources"`
	// Prepared is the management side's rendering of each bundle, for an agent-mode cluster's agent, which
	// has no checkout to render from.
	Prepared []PreparedBundle `json:"prepared,omitempty"`
	// Generation and Grant prove Prepared the management side's (PrepareResult.Grant).
	Generation int64  `json:"generation,omitempty"`
	Grant      string `json:"grant,omitempty"`
}

// Observation is the result of ActivityObserve: the state of one cluster's bundles.
type Observation struct {
	Bundles   []BundleObservation `json:"bundles"`
	CheckedAt time.Time           `json:"checkedAt"`
}

// BundleObservation is the desired and live state of one bundle on one cluster.
type BundleObservation struct {
	Bundle      string `json:"bundle"`
	ReleaseName string `json:"releaseName,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	// Deploy is false when a targetCustomization says doNotDeploy for this cluster.
	Deploy    bool   `json:"deploy"`
	DesiredID string `json:"desiredID,omitempty"`
	// Error is set when the bundle cannot be rendered for this cluster.
	Error     string          `json:"error,omitempty"`
	ErrorType string          `json:"errorType,omitempty"`
	Release   ReleaseInfo     `json:"release"`
	Resources ResourceSummary `json:"resources"`
	// CorrectDrift is the bundle's effective drift correction on this cluster (its fleet.yaml or
	// targetCustomization, else the GitRepo's); nil in observations recorded before it was reported.
	CorrectDrift *fleet.CorrectDrift `json:"correctDrift,omitempty"`
	// Paused is the bundle's fleet.yaml `paused`: changes wait.
	Paused bool `json:"paused,omitempty"`
	// SyncGeneration is the GitRepo forceSyncGeneration the desired state carries.
	SyncGeneration int64 `json:"syncGeneration,omitempty"`
	// ChartVersion and ChartDigest are the remote chart the desired state deploys, as the plan resolved it.
	ChartVersion string `json:"chartVersion,omitempty"`
	ChartDigest  string `json:"chartDigest,omitempty"`
}

// ReleaseInfo is the latest Helm revision of a bundle's release.
type ReleaseInfo struct {
	Exists       bool          `json:"exists"`
	Status       ReleaseStatus `json:"status,omitempty"`
	Revision     int           `json:"revision,omitempty"`
	DeploymentID string        `json:"deploymentID,omitempty"`
	Description  string        `json:"description,omitempty"`
	// Commit is the (short) commit the revision was deployed from.
	Commit string `json:"commit,omitempty"`
}

// NextAction is what an apply does to this release to make it hold desiredID, judged from the release
// alone: install it, recover it from an operation that never finished (then upgrade), upgrade it, or
// nothing. A failed revision of the same desired state waits out its backoff unless retryDue. The cluster
// workflow's decision (drift, pauses, dependencies on top) and `flotilla diff` both start from it.
func (r ReleaseInfo) NextAction(desiredID string, retryDue bool) Action {
	switch {
	case !r.Exists:
		return ActionInstall
	case r.Status.Pending() || r.Status == ReleaseUninstalling:
		// A worker killed mid-operation leaves the release locked; nothing else moves it.
		return ActionRecover
	case r.Status == ReleaseFailed && !retryDue:
		// A failed apply of this desired state, or of the one before, backs off before it is tried again.
		return ActionNone
	case r.DeploymentID != desiredID, r.Status != ReleaseDeployed:
		return ActionUpgrade
	}
	return ActionNone
}

// ResourceSummary counts the objects a release owns by state, with Fleet's key names.
type ResourceSummary struct {
	Counts ResourceCounts `json:"counts"`
	// NonReady holds at most ten short entries such as `configmap seed/cm-5 missing`, worst first.
	NonReady []string `json:"nonReady,omitempty"`
	Checked  bool     `json:"checked"`
}

// ResourceCounts uses Fleet's resourceCounts keys.
type ResourceCounts struct {
	DesiredReady int `json:"desiredReady"`
	Ready        int `json:"ready"`
	NotReady     int `json:"notReady"`
	Missing      int `json:"missing"`
	Modified     int `json:"modified"`
	Orphaned     int `json:"orphaned"`
	WaitApplied  int `json:"waitApplied"`
	Unknown      int `json:"unknown"`
}

// Add sums counts.
func (c *ResourceCounts) Add(o ResourceCounts) {
	c.DesiredReady += o.DesiredReady
	c.Ready += o.Ready
	c.NotReady += o.NotReady
	c.Missing += o.Missing
	c.Modified += o.Modified
	c.Orphaned += o.Orphaned
	c.WaitApplied += o.WaitApplied
	c.Unknown += o.Unknown
}

// ApplyInput is the input of ActivityApply: the decided actions on bundles of a ClusterTarget.
type ApplyInput struct {
	Target  ClusterTarget  `json:"target"`
	Actions []BundleAction `json:"actions"`
	// Sweep, when set, uninstalls the GitRepo's releases the target no longer has before acting, so a
	// release that moved (new name or namespace) frees its objects for the new one.
	Sweep *Sweep `json:"sweep,omitempty"`
	// Observe asks for an observation of every bundle, objects included, once the actions are done: the
	// observation the workflow needs next, without a separate Observe activity and workflow task.
	Observe bool `json:"observe,omitempty"`
	// Prepared, Generation and Grant are as in ObserveInput.
	Prepared   []PreparedBundle `json:"prepared,omitempty"`
	Generation int64            `json:"generation,omitempty"`
	Grant      string           `json:"grant,omitempty"`
}

// BundleAction is one decided action, valid only while the bundle still renders to ExpectedID.
type BundleAction struct {
	Bundle     string `json:"bundle"`
	Action     Action `json:"action"`
	ExpectedID string `json:"expectedID"`
	Force      bool   `json:"force,omitempty"`
}

// ApplyResult is the result of ActivityApply: every action's outcome; one bundle failing never hides the
// others.
type ApplyResult struct {
	Bundles []BundleApplyResult `json:"bundles"`
	// Observation is set when ApplyInput.Observe asked for it and the cluster could be observed.
	Observation *Observation `json:"observation,omitempty"`
	// Swept lists the releases the sweep uninstalled (namespace/name); SweepError says why it stopped.
	Swept      []string `json:"swept,omitempty"`
	SweepError string   `json:"sweepError,omitempty"`
}

// Sweep says which of a GitRepo's releases on one cluster stay; every other release of the GitRepo on
// that cluster is uninstalled: bundles deleted from the repository, bundles no longer deployed there
// (doNotDeploy), releases left behind by a new release name or namespace. Only what a successful plan
// and a successful render say is gone goes: a bundle that failed to render keeps every release it has.
type Sweep struct {
	// Releases are where the target's deployed bundles live now.
	Releases []ReleaseRef `json:"releases,omitempty"`
	// KeepBundles are bundles whose every release stays, because where they should live is unknown.
	KeepBundles []string `json:"keepBundles,omitempty"`
	// KeepResources uninstalls only Helm's record and leaves the objects (also when the release was
	// deployed with keepResources, which its labels remember).
	KeepResources bool `json:"keepResources,omitempty"`
}

// ReleaseRef names one bundle's release on a cluster.
type ReleaseRef struct {
	Bundle    string `json:"bundle"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// BundleApplyResult is one action's outcome.
type BundleApplyResult struct {
	Bundle    string `json:"bundle"`
	Revision  int    `json:"revision,omitempty"`
	Skipped   bool   `json:"skipped,omitempty"`
	Error     string `json:"error,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
}

// UninstallInput is the input of ActivityUninstall: remove a GitRepo's releases from a cluster.
type UninstallInput struct {
	GitRepo string `json:"gitRepo"`
	Cluster string `json:"cluster"`
	// ClusterDigest is not read: Uninstall always reads the inventory afresh. Workflows still send it, so
	// the recorded inputs of Uninstall keep their JSON.
	ClusterDigest string `json:"clusterDigest,omitempty"`
	KeepResources bool   `json:"keepResources,omitempty"`
	// Sweep, when set, removes only what it does not keep; without it every release of this GitRepo on
	// the cluster is removed.
	Sweep *Sweep `json:"sweep,omitempty"`
	// Namespace is the GitRepo's, and so the cluster's (GitRepoKey.PayloadNamespace).
	Namespace string `json:"namespace,omitempty"`
	// Generation and Grant: on an agent-mode cluster, the management side's grant of this removal
	// (ActivityGrantRemoval); with Prepared, of the renderings whose releases a sweep keeps.
	Generation int64            `json:"generation,omitempty"`
	Grant      string           `json:"grant,omitempty"`
	Prepared   []PreparedBundle `json:"prepared,omitempty"`
	// DeleteNamespace is the GitRepo's targetNamespace, to delete once every release is uninstalled: the
	// GitRepo is being deleted with deleteNamespace (never with keepResources). Protected namespaces
	// (default, kube-*, fleet-*, cattle-fleet-*), one that still holds another release and one on a
	// cluster confined to a namespace stay.
	DeleteNamespace string `json:"deleteNamespace,omitempty"`
}

// Key is the GitRepo whose releases go.
func (in UninstallInput) Key() GitRepoKey { return KeyOf(in.Namespace, in.GitRepo) }

// UninstallResult is the result of ActivityUninstall: what was removed (namespace/name).
type UninstallResult struct {
	Removed []string `json:"removed,omitempty"`
	// DeletedNamespaces are the namespaces deleted after their releases (deleteNamespace); KeptNamespaces
	// say which were not and why.
	DeletedNamespaces []string `json:"deletedNamespaces,omitempty"`
	KeptNamespaces    []string `json:"keptNamespaces,omitempty"`
}

// ListClusterWorkflowsInput is the input of ActivityListClusterWorkflows: which cluster workflows of a
// GitRepo are running?
type ListClusterWorkflowsInput struct {
	GitRepo string `json:"gitRepo"`
	// Namespace is the GitRepo's (GitRepoKey.PayloadNamespace).
	Namespace string `json:"namespace,omitempty"`
}

// Key is the GitRepo whose cluster workflows are listed.
func (in ListClusterWorkflowsInput) Key() GitRepoKey { return KeyOf(in.Namespace, in.GitRepo) }

// ListClusterWorkflowsResult is the result of ActivityListClusterWorkflows: the clusters whose workflow
// is running, sorted.
type ListClusterWorkflowsResult struct {
	Clusters []string `json:"clusters"`
}

// NotifyGitReposInput is the input of ActivityNotifyGitRepos: tell every running GitRepo that the
// inventory changed.
type NotifyGitReposInput struct {
	// Generation is the inventory's: each GitRepo is sent it (SyncRequest) and polls only if it has not
	// read that generation already.
	Generation int64 `json:"generation"`
}

// SyncRequest is the `sync` signal's payload when it has one. Without one (the webhook, the CLI), a
// GitRepo polls now; with InventoryGeneration, only if its last poll read an older inventory: a GitRepo
// started after the change has planned against it already.
type SyncRequest struct {
	InventoryGeneration int64 `json:"inventoryGeneration,omitempty"`
}

// NotifyGitReposResult is the result of ActivityNotifyGitRepos: how many GitRepos were told.
type NotifyGitReposResult struct {
	Notified int `json:"notified"`
}
