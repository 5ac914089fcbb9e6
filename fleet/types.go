// Package fleet holds Flotilla's user-facing model: Fleet-compatible GitRepo, Cluster, ClusterGroup and
// fleet.yaml types. Field names and JSON spellings follow Rancher Fleet's API (fleet.cattle.io/v1alpha1)
// so that existing GitRepo YAML and fleet.yaml files work unchanged.
package fleet

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// APIVersion is the apiVersion Flotilla accepts for GitRepo, Cluster and ClusterGroup documents.
const APIVersion = "fleet.cattle.io/v1alpha1"

// Kinds of documents accepted by `flotilla apply`.
const (
	KindGitRepo      = "GitRepo"
	KindCluster      = "Cluster"
	KindClusterGroup = "ClusterGroup"
	// KindGitRepoRestriction is read only from a management cluster (flotilla-controller).
	KindGitRepoRestriction = "GitRepoRestriction"
)

// DefaultNamespace is the namespace (Fleet's "workspace") of objects that do not name one.
const DefaultNamespace = "fleet-default"

// Workspace is the workspace of an object whose metadata.namespace is ns: DefaultNamespace when it names
// none. GitRepos target only the clusters and groups of their own workspace.
func Workspace(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

// DisplayName is how messages name an object: its name in fleet-default, as they did before workspaces
// meant anything, and namespace/name in any other workspace.
func DisplayName(ns, name string) string {
	if Workspace(ns) == DefaultNamespace {
		return name
	}
	return ns + "/" + name
}

// ObjectMeta is the subset of Kubernetes object metadata Flotilla uses.
type ObjectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// GitRepo points at a repository whose folders are bundles.
type GitRepo struct {
	APIVersion string      `json:"apiVersion,omitempty"`
	Kind       string      `json:"kind,omitempty"`
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       GitRepoSpec `json:"spec"`
}

// GitRepoSpec is Fleet's GitRepo spec.
type GitRepoSpec struct {
	// Repo is the git URL. It must not carry credentials: those are named by ClientSecretName and resolved by the worker.
	Repo string `json:"repo"`
	// Branch is followed when Revision is empty. Empty means the remote's HEAD.
	Branch string `json:"branch,omitempty"`
	// Revision pins a commit SHA or a tag.
	Revision string `json:"revision,omitempty"`
	// Paths are folders (globs allowed) scanned for bundles; empty means the repository root.
	Paths []string `json:"paths,omitempty"`
	// Targets choose clusters; empty means the ClusterGroup "default", as in Fleet.
	Targets []GitTarget `json:"targets,omitempty"`
	// PollingInterval is a Go duration string; empty means 15s, as in Fleet.
	PollingInterval string `json:"pollingInterval,omitempty"`
	// DisablePolling leaves syncing to webhooks and explicit sync requests.
	DisablePolling bool `json:"disablePolling,omitempty"`
	// Paused stops changes from reaching clusters; their bundles show OutOfSync.
	Paused bool `json:"paused,omitempty"`
	// CorrectDrift restores objects changed or deleted by hand.
	CorrectDrift *CorrectDrift `json:"correctDrift,omitempty"`
	// TargetNamespace forces every namespaced object into this namespace; cluster-scoped objects are refused.
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// KeepResources keeps deployed objects when the GitRepo or a bundle is removed; only the Helm record goes.
	KeepResources bool `json:"keepResources,omitempty"`
	// DeleteNamespace deletes TargetNamespace on every cluster once the GitRepo, deleted, is uninstalled
	// there; never with KeepResources, never a protected namespace (see ProtectedNamespace).
	DeleteNamespace bool `json:"deleteNamespace,omitempty"`
	// ClientSecretName names git credentials known to the worker (never their content).
	ClientSecretName string `json:"clientSecretName,omitempty"`
	// HelmSecretName names the credentials of the chart repositories and OCI registries the bundles' charts
	// come from, resolved by the worker's credentials store (never their content).
	HelmSecretName string `json:"helmSecretName,omitempty"`
	// HelmRepoURLRegex, when set, limits HelmSecretName to chart URLs it matches: any other URL is fetched
	// without credentials. Unlike Fleet, where an empty regex sends them to no URL, an empty one sends them
	// to every chart URL of the GitRepo, as Fleet did before the field existed.
	HelmRepoURLRegex string `json:"helmRepoURLRegex,omitempty"`
	// HelmPassCredentials sends HelmSecretName's credentials to every https origin a chart source leads
	// to (Helm's --pass-credentials, Flux's and Argo CD's passCredentials): an archive an index.yaml lists
	// on another host, a redirect, a dependency's repository. Without it they go only to the origin of
	// the repository, archive or registry the fleet.yaml names. Flotilla's; Fleet has no such field.
	HelmPassCredentials bool `json:"helmPassCredentials,omitempty"`
	// CABundle is PEM certificates trusted, besides the system's, for an HTTPS repository and its charts; base64 in JSON
	// and YAML, as Fleet's.
	CABundle []byte `json:"caBundle,omitempty"`
	// InsecureSkipTLSVerify turns off the certificate check of the HTTPS repository and of its charts.
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	// SyncWindows are Flotilla's own: when changes may reach the clusters (SyncWindow).
	SyncWindows []SyncWindow `json:"syncWindows,omitempty"`
	// ForceSyncGeneration, when increased, redeploys every bundle.
	ForceSyncGeneration int64 `json:"forceSyncGeneration,omitempty"`
	// ServiceAccount is refused by `flotilla apply`: Flotilla applies with the cluster's kubeconfig identity
	// and does not impersonate yet.
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// HelmOp, set only on the GitRepo a HelmOp runs as (HelmOp.AsGitRepo), is its one bundle's fleet.yaml:
	// there is no repository, and Repo is HelmOpRepoPrefix and the name. `flotilla apply` refuses it in a
	// GitRepo document.
	HelmOp *FleetYAML `json:"helmOp,omitempty"`
}

// GitTarget selects clusters. All criteria set on one target must match; a target with none matches nothing.
type GitTarget struct {
	Name                 string                `json:"name,omitempty"`
	ClusterName          string                `json:"clusterName,omitempty"`
	ClusterSelector      *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	ClusterGroup         string                `json:"clusterGroup,omitempty"`
	ClusterGroupSelector *metav1.LabelSelector `json:"clusterGroupSelector,omitempty"`
	DoNotDeploy          bool                  `json:"doNotDeploy,omitempty"`
}

// CorrectDrift configures drift correction, as in Fleet.
type CorrectDrift struct {
	Enabled         bool `json:"enabled,omitempty"`
	Force           bool `json:"force,omitempty"`
	KeepFailHistory bool `json:"keepFailHistory,omitempty"`
}

// Cluster is a deployment target.
type Cluster struct {
	APIVersion string      `json:"apiVersion,omitempty"`
	Kind       string      `json:"kind,omitempty"`
	Metadata   ObjectMeta  `json:"metadata"`
	Spec       ClusterSpec `json:"spec"`
}

// ClusterSpec describes how to reach a cluster and what its templates see.
type ClusterSpec struct {
	// TemplateValues is exposed to `${ }` templates as .ClusterValues.
	TemplateValues map[string]any `json:"templateValues,omitempty"`
	// KubeConfigPath is a kubeconfig file on the worker's host. Only the path travels through Temporal.
	KubeConfigPath string `json:"kubeConfigPath,omitempty"`
	// KubeConfigContext selects a context in that file; empty means its current context.
	KubeConfigContext string `json:"kubeConfigContext,omitempty"`
	// KubeConfigSecret is a Secret of the cluster's own namespace in the management cluster whose key
	// `value` holds its kubeconfig, certificates inlined, as Fleet's: the worker reads it there (ADR 38).
	// Only the name travels through Temporal.
	KubeConfigSecret string `json:"kubeConfigSecret,omitempty"`
	// KubeConfigSecretNamespace is Fleet's field; Flotilla accepts only the cluster's own namespace, so that
	// a workspace reaches no other's Secrets.
	KubeConfigSecretNamespace string `json:"kubeConfigSecretNamespace,omitempty"`
	// Paused freezes every bundle on this cluster.
	Paused bool `json:"paused,omitempty"`
	// ConfineToNamespace is a Flotilla extension for benchmarks and tests: it makes this cluster one
	// namespace of the cluster its kubeconfig reaches. Every namespaced object of every bundle and every
	// Helm release go into this namespace (overriding targetNamespace, namespace and defaultNamespace), and
	// cluster-scoped objects are refused, so several such clusters can share one API server without ever
	// sharing a release, the way Fleet's agent simulators share one.
	ConfineToNamespace string `json:"confineToNamespace,omitempty"`
	// Agent, when set, registers the cluster in pull mode (ADR 22): a flotilla-agent inside it dials out to
	// Temporal and runs its cluster-side activities, and the management side holds no kubeconfig for it
	// (KubeConfigPath stays empty).
	Agent *ClusterAgent `json:"agent,omitempty"`
}

// ClusterAgent is how an agent-mode cluster's flotilla-agent runs, as its operator supplied it: an empty
// field takes its default (internal/agentmanifest), so that a default is never compared with a value.
type ClusterAgent struct {
	// Image is the flotilla image the agent's Deployment runs.
	Image string `json:"image,omitempty"`
	// Namespace is where the agent runs in its cluster.
	Namespace string `json:"namespace,omitempty"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"logLevel,omitempty"`
	// MaxConcurrentActivities bounds the activities the agent runs at once.
	MaxConcurrentActivities int `json:"maxConcurrentActivities,omitempty"`
	// HelmQPS and HelmBurst bound the agent's requests to its API server.
	HelmQPS   float64 `json:"helmQPS,omitempty"`
	HelmBurst int     `json:"helmBurst,omitempty"`
	// TemporalAddress and TemporalNamespace are where the agent dials out to: the installation's own when
	// empty.
	TemporalAddress   string `json:"temporalAddress,omitempty"`
	TemporalNamespace string `json:"temporalNamespace,omitempty"`
}

// ClusterGroup names a set of clusters by label selector.
type ClusterGroup struct {
	APIVersion string           `json:"apiVersion,omitempty"`
	Kind       string           `json:"kind,omitempty"`
	Metadata   ObjectMeta       `json:"metadata"`
	Spec       ClusterGroupSpec `json:"spec"`
}

// ClusterGroupSpec selects the group's clusters.
type ClusterGroupSpec struct {
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// FleetYAML is the content of a bundle's fleet.yaml. The keys fleet.yaml accepts are these types' JSON
// keys (package bundle derives its unknown-key check from them), plus the keys of Fleet's schema that
// bundle lists as not supported yet.
type FleetYAML struct {
	Name   string            `json:"name,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	BundleDeploymentOptions
	TargetCustomizations []BundleTarget `json:"targetCustomizations,omitempty"`
	// TargetCustomizationMode is FirstMatch (when empty) or AllMatches: whether only the first matching
	// targetCustomization applies to a cluster, or every matching one, merged in order.
	TargetCustomizationMode string `json:"targetCustomizationMode,omitempty"`
	// OverrideTargets replaces the GitRepo's targets for this bundle.
	OverrideTargets []GitTarget `json:"overrideTargets,omitempty"`
	Paused          bool        `json:"paused,omitempty"`
	// DeleteNamespace deletes the bundle's namespace on a cluster once its release is uninstalled there
	// (the bundle deleted, not deployed there any more, its GitRepo deleted, the cluster removed). As in
	// Fleet it is the bundle's, not a targetCustomization's; see ProtectedNamespace for what stays.
	DeleteNamespace bool `json:"deleteNamespace,omitempty"`
	// DependsOn holds the bundle back on each cluster until the bundles it names are in an accepted state
	// on that cluster. As in Fleet it is the bundle's, not a targetCustomization's.
	DependsOn []Dependency `json:"dependsOn,omitempty"`
	// RolloutStrategy is how a new commit reaches the GitRepo's clusters, partition by partition (package
	// fleet/rollout). As in Fleet it is the bundle's; Flotilla rolls a GitRepo's clusters out as one, with
	// the strategy of its first bundle that declares one (ADR 30).
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// RolloutStrategy is Fleet's rolloutStrategy: same fields, same defaults (fleet/rollout applies them).
type RolloutStrategy struct {
	// MaxUnavailable is a number or percentage of the clusters that may be unavailable during an update
	// (default 100%).
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// MaxUnavailablePartitions is a number or percentage of the partitions that may be unavailable before
	// later partitions wait (default 0).
	MaxUnavailablePartitions *intstr.IntOrString `json:"maxUnavailablePartitions,omitempty"`
	// AutoPartitionSize is the size of the automatic partitions, a number or a percentage (default 25%).
	AutoPartitionSize *intstr.IntOrString `json:"autoPartitionSize,omitempty"`
	// AutoPartitionThreshold is how many clusters there must be before automatic partitions are made
	// (default 200).
	AutoPartitionThreshold *int `json:"autoPartitionThreshold,omitempty"`
	// MaxNew is how many clusters that have nothing of the GitRepo yet get it in one decision (default 50).
	MaxNew *int `json:"maxNew,omitempty"`
	// Partitions, in rollout order; clusters none of them matches follow in automatic partitions.
	Partitions []Partition `json:"partitions,omitempty"`
}

// Partition is a set of clusters rolled out together, chosen as a target chooses them.
type Partition struct {
	Name string `json:"name,omitempty"`
	// MaxUnavailable is how many of the partition's clusters may be unavailable for it to count as done
	// (default: the strategy's maxUnavailable).
	MaxUnavailable       *intstr.IntOrString   `json:"maxUnavailable,omitempty"`
	ClusterName          string                `json:"clusterName,omitempty"`
	ClusterSelector      *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	ClusterGroup         string                `json:"clusterGroup,omitempty"`
	ClusterGroupSelector *metav1.LabelSelector `json:"clusterGroupSelector,omitempty"`
	// Gate is Flotilla's own (Fleet reads past it): what must happen once the partition is done before
	// the next one starts.
	Gate *PartitionGate `json:"gate,omitempty"`
}

// PartitionGate holds a rollout after its partition: for a person's approval (`flotilla rollout
// approve`), for a soak time during which every cluster of the partition stays Ready, or both.
type PartitionGate struct {
	Approval bool `json:"approval,omitempty"`
	// Soak is a duration (10m, 1h30m).
	Soak string `json:"soak,omitempty"`
}

// Dependency is one dependsOn entry, Fleet's BundleRef: the bundle called Name, or every bundle whose
// labels match Selector (both set: the bundle called Name if it matches), must be in one of
// AcceptedStates (Ready when empty) on a cluster before the bundle is installed or upgraded there.
type Dependency struct {
	Name     string                `json:"name,omitempty"`
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// AcceptedStates are bundle states (see States).
	AcceptedStates []string `json:"acceptedStates,omitempty"`
}

// States are Fleet's bundle states, best first: the values dependsOn acceptedStates may name, and the
// states Flotilla reports.
var States = []string{"Ready", "NotReady", "Pending", "OutOfSync", "Modified", "WaitApplied", "ErrApplied"}

// BundleDeploymentOptions are the options a bundle is deployed with; targetCustomizations override them per cluster.
type BundleDeploymentOptions struct {
	DefaultNamespace string `json:"defaultNamespace,omitempty"`
	// TargetNamespace forces every namespaced object into this namespace (fleet.yaml key `namespace`).
	TargetNamespace      string            `json:"namespace,omitempty"`
	Helm                 *HelmOptions      `json:"helm,omitempty"`
	Kustomize            *KustomizeOptions `json:"kustomize,omitempty"`
	YAML                 *YAMLOptions      `json:"yaml,omitempty"`
	Diff                 *DiffOptions      `json:"diff,omitempty"`
	Ignore               IgnoreOptions     `json:"ignore,omitempty"`
	CorrectDrift         *CorrectDrift     `json:"correctDrift,omitempty"`
	KeepResources        bool              `json:"keepResources,omitempty"`
	ServiceAccount       string            `json:"serviceAccount,omitempty"`
	ForceSyncGeneration  int64             `json:"forceSyncGeneration,omitempty"`
	NamespaceLabels      map[string]string `json:"namespaceLabels,omitempty"`
	NamespaceAnnotations map[string]string `json:"namespaceAnnotations,omitempty"`
	DeleteCRDResources   bool              `json:"deleteCRDResources,omitempty"`
}

// BundleTarget is one targetCustomizations entry: a cluster match plus the options it overrides.
type BundleTarget struct {
	BundleDeploymentOptions
	Name                 string                `json:"name,omitempty"`
	ClusterName          string                `json:"clusterName,omitempty"`
	ClusterSelector      *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	ClusterGroup         string                `json:"clusterGroup,omitempty"`
	ClusterGroupSelector *metav1.LabelSelector `json:"clusterGroupSelector,omitempty"`
	DoNotDeploy          bool                  `json:"doNotDeploy,omitempty"`
}

// HelmOptions are fleet.yaml's `helm` options.
type HelmOptions struct {
	// Chart is a folder inside the repository (relative to the bundle), a chart's name in Repo, an https URL
	// of a chart archive, or oci://registry/path/chart.
	Chart string `json:"chart,omitempty"`
	// Repo is an https Helm repository (its index.yaml) or an oci:// registry path holding Chart.
	Repo string `json:"repo,omitempty"`
	// Version is an exact version or a semver constraint of a remote chart, resolved to the newest match at
	// each poll; empty is the newest stable version.
	Version     string `json:"version,omitempty"`
	ReleaseName string `json:"releaseName,omitempty"`
	// Values are templated per cluster with `${ }` delimiters.
	Values map[string]any `json:"values,omitempty"`
	// ValuesFiles are read from the bundle folder, templated like Values, and merged over them in order.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// ValuesFrom are read on the target cluster when the bundle is checked and applied, never templated,
	// and merged over every other value in order (each entry's ConfigMap, then its Secret), as Fleet's
	// agent merges them. Only their digest leaves the cluster's activity.
	ValuesFrom []ValuesFrom `json:"valuesFrom,omitempty"`
	// TemplateValues: each entry is templated, parsed as YAML and set as a top-level values key.
	TemplateValues       map[string]string `json:"templateValues,omitempty"`
	TimeoutSeconds       int               `json:"timeoutSeconds,omitempty"`
	Force                bool              `json:"force,omitempty"`
	TakeOwnership        bool              `json:"takeOwnership,omitempty"`
	Atomic               bool              `json:"atomic,omitempty"`
	WaitForJobs          bool              `json:"waitForJobs,omitempty"`
	MaxHistory           int               `json:"maxHistory,omitempty"`
	DisablePreProcess    bool              `json:"disablePreProcess,omitempty"`
	SkipSchemaValidation bool              `json:"skipSchemaValidation,omitempty"`
	// DisableDependencyUpdate deploys a chart's Chart.yaml dependencies only from its charts/ folder,
	// fetching none.
	DisableDependencyUpdate bool `json:"disableDependencyUpdate,omitempty"`
}

// ValuesFrom names a key of a ConfigMap or a Secret on the target cluster that holds Helm values (YAML).
type ValuesFrom struct {
	ConfigMapKeyRef *ValuesKeyRef `json:"configMapKeyRef,omitempty"`
	SecretKeyRef    *ValuesKeyRef `json:"secretKeyRef,omitempty"`
}

// ValuesKeyRef is Fleet's ConfigMapKeySelector and SecretKeySelector: an empty namespace is the release's
// namespace, an empty key is "values.yaml".
type ValuesKeyRef struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Key       string `json:"key,omitempty"`
}

// KustomizeOptions are fleet.yaml's `kustomize` options.
type KustomizeOptions struct {
	Dir string `json:"dir,omitempty"`
}

// YAMLOptions are fleet.yaml's `yaml` options.
type YAMLOptions struct {
	Overlays []string `json:"overlays,omitempty"`
}

// DiffOptions hide known differences from drift detection.
type DiffOptions struct {
	ComparePatches []ComparePatch `json:"comparePatches,omitempty"`
}

// ComparePatch selects objects and the differences to ignore on them.
type ComparePatch struct {
	Kind         string      `json:"kind,omitempty"`
	APIVersion   string      `json:"apiVersion,omitempty"`
	Namespace    string      `json:"namespace,omitempty"`
	Name         string      `json:"name,omitempty"`
	Operations   []Operation `json:"operations,omitempty"`
	JSONPointers []string    `json:"jsonPointers,omitempty"`
}

// Operation is a JSON-patch-like operation; `remove` hides a path, `ignore` drops the object from checks.
type Operation struct {
	Op    string `json:"op,omitempty"`
	Path  string `json:"path,omitempty"`
	Value string `json:"value,omitempty"`
}

// IgnoreOptions drop matching status conditions before readiness is judged.
type IgnoreOptions struct {
	Conditions []map[string]string `json:"conditions,omitempty"`
}

// ClusterInfo is what a bundle sees of the cluster it is rendered for.
type ClusterInfo struct {
	Name           string
	Namespace      string
	Labels         map[string]string
	Annotations    map[string]string
	TemplateValues map[string]any
	// Groups are the names of the ClusterGroups this cluster belongs to.
	Groups []string
	// GroupLabels maps each group name to that group's labels, for clusterGroupSelector.
	GroupLabels map[string]map[string]string
	// ConfineToNamespace is the Cluster's spec.confineToNamespace: when set, the only namespace anything
	// of any bundle is deployed to on this cluster.
	ConfineToNamespace string
}
