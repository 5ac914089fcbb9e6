// Package agentmanifest makes the Kubernetes objects that run a pull-mode cluster's flotilla-agent (ADR 22)
// from the cluster's agent settings, without I/O: `flotilla agent manifest` prints them for the operator to
// apply in the cluster.
//
// An agent's settings are kept as the operator supplied them (fleet.ClusterAgent): a field left out takes
// its default here, when the effective configuration is made, and only effective configurations are ever
// compared. Fleet compared a supplied agent setting with a default (its seed bug 002) and redeployed agents
// whose configuration had not changed; here a registration that spells out a default and one that leaves it
// out have the same effective configuration and the same ConfigDigest.
package agentmanifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// Name is the name of the agent's ServiceAccount, Secret and Deployment in its namespace.
const Name = "flotilla-agent"

// ReleaseName is the Helm release Flotilla keeps the agent's objects in (api.AgentReleaseName).
const ReleaseName = "flotilla-agent"

// Defaults of the settings that do not depend on the installation.
const (
	DefaultNamespace               = "flotilla-system"
	DefaultLogLevel                = "info"
	DefaultMaxConcurrentActivities = 8
	DefaultHelmQPS                 = 50
	DefaultHelmBurst               = 100
	// DefaultImageRepository is the repository of the default image, flotilla:<version>.
	DefaultImageRepository = "flotilla"
)

// Installation is what an agent's defaults take from the installation that registers it: where its
// Temporal is, and its task queue, as the CLI is configured for it; and the CLI's version, the tag of the
// default image, so that an agent runs the release of the installation that made its manifest.
type Installation struct {
	TemporalAddress   string
	TemporalNamespace string
	TaskQueue         string
	Version           string
}

// Config is an agent's effective configuration: every field set. Its JSON encoding is what ConfigDigest
// hashes, so a field added here redeploys every agent whose value of it differs from before.
type Config struct {
	Image                   string  `json:"image"`
	Namespace               string  `json:"namespace"`
	LogLevel                string  `json:"logLevel"`
	MaxConcurrentActivities int     `json:"maxConcurrentActivities"`
	HelmQPS                 float64 `json:"helmQPS"`
	HelmBurst               int     `json:"helmBurst"`
	TemporalAddress         string  `json:"temporalAddress"`
	TemporalNamespace       string  `json:"temporalNamespace"`
	// TaskQueue is the installation's task queue; the agent polls api.AgentTaskQueue of it.
	TaskQueue string `json:"taskQueue"`
}

// Defaults is the configuration of an agent whose operator supplied nothing, except what comes from the
// installation (image, Temporal address and namespace, task queue), which Effective fills in.
func Defaults() Config {
	return Config{
		Namespace:               DefaultNamespace,
		LogLevel:                DefaultLogLevel,
		MaxConcurrentActivities: DefaultMaxConcurrentActivities,
		HelmQPS:                 DefaultHelmQPS,
		HelmBurst:               DefaultHelmBurst,
	}
}

// Effective is the configuration an agent runs with: each setting the operator supplied, each other one
// its default. A supplied value is taken as it is and never compared with its default.
func Effective(spec fleet.ClusterAgent, inst Installation) Config {
	cfg := Defaults()
	cfg.Image = DefaultImageRepository + ":" + inst.Version
	cfg.TemporalAddress, cfg.TemporalNamespace, cfg.TaskQueue = inst.TemporalAddress, inst.TemporalNamespace, inst.TaskQueue
	if spec.Image != "" {
		cfg.Image = spec.Image
	}
	if spec.Namespace != "" {
		cfg.Namespace = spec.Namespace
	}
	if spec.LogLevel != "" {
		cfg.LogLevel = spec.LogLevel
	}
	if spec.MaxConcurrentActivities != 0 {
		cfg.MaxConcurrentActivities = spec.MaxConcurrentActivities
	}
	if spec.HelmQPS != 0 {
		cfg.HelmQPS = spec.HelmQPS
	}
	if spec.HelmBurst != 0 {
		cfg.HelmBurst = spec.HelmBurst
	}
	if spec.TemporalAddress != "" {
		cfg.TemporalAddress = spec.TemporalAddress
	}
	if spec.TemporalNamespace != "" {
		cfg.TemporalNamespace = spec.TemporalNamespace
	}
	return cfg
}

// ConfigDigest identifies an effective configuration ("sha256:<hex>" of its JSON encoding, whose keys
// are in a fixed order): the agent's Deployment must be redeployed exactly when it changes.
func ConfigDigest(cfg Config) string {
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(err) // a Config is plain data; a NaN or infinite QPS is refused before it gets here
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// AnnotationConfigDigest on the agent's pod template carries ConfigDigest, so that `kubectl describe` shows
// which configuration a pod runs; the kept release records the same digest as a release label.
const AnnotationConfigDigest = "flotilla.dev/agent-config-digest"

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Check refuses what would make objects Kubernetes or the agent cannot take: it is what YAML checks.
func Check(cluster, workspace string, cfg Config) error {
	if !dnsLabel.MatchString(cluster) || len(cluster) > 63 {
		return fmt.Errorf("cluster name %q: must be a DNS label", cluster)
	}
	for _, f := range []struct{ name, value string }{{"workspace", fleet.Workspace(workspace)}, {"agent namespace", cfg.Namespace}} {
		if !dnsLabel.MatchString(f.value) || len(f.value) > 63 {
			return fmt.Errorf("cluster %q: %s %q: must be a DNS label", cluster, f.name, f.value)
		}
	}
	for _, f := range []struct{ name, value string }{{"image", cfg.Image}, {"Temporal address", cfg.TemporalAddress},
		{"Temporal namespace", cfg.TemporalNamespace}, {"task queue", cfg.TaskQueue}, {"log level", cfg.LogLevel}} {
		if f.value == "" {
			return fmt.Errorf("cluster %q: the agent's %s is empty", cluster, f.name)
		}
	}
	if strings.HasSuffix(cfg.Image, ":") {
		// The default image's tag is the CLI's version; a CLI built without one cannot name its image.
		return fmt.Errorf("cluster %q: the agent's image %q has no tag: this flotilla has no version to take it from; "+
			"register the cluster with --agent-image (spec.agent.image)", cluster, cfg.Image)
	}
	return nil
}

// Secrets are what an agent is given that no one else may read: they go into its Secret only, never into
// the Deployment, a command line or the release Flotilla keeps.
type Secrets struct {
	// APIKey is the Temporal API key the agent dials with.
	APIKey string
	// AgentKey is its cluster's agent key (ADR 26; agentkey.Key.Encode).
	AgentKey string
}

// Objects are the agent's objects, in the order they can be applied: its Namespace, ServiceAccount,
// ClusterRoleBinding, Secret and Deployment, with secrets in the Secret.
func Objects(cluster, workspace string, cfg Config, secrets Secrets) []map[string]any {
	workspace = fleet.Workspace(workspace)
	ns := cfg.Namespace
	labels := map[string]any{
		"app.kubernetes.io/name":      Name,
		"app.kubernetes.io/part-of":   "flotilla",
		"app.kubernetes.io/component": "agent",
	}
	meta := func(name string, namespaced bool) map[string]any {
		m := map[string]any{"name": name, "labels": labels}
		if namespaced {
			m["namespace"] = ns
		}
		return m
	}
	// The objects Flotilla keeps as the agent's release (KeptObjects) carry from the start the ownership
	// Helm writes when it adopts them: adoption then changes nothing, not even the Deployment's annotations,
	// whose change alone would bump its generation.
	kept := func(name string, namespaced bool) map[string]any {
		m := meta(name, namespaced)
		owned := map[string]any{"app.kubernetes.io/managed-by": "Helm"}
		for k, v := range labels {
			owned[k] = v
		}
		m["labels"] = owned
		m["annotations"] = map[string]any{"meta.helm.sh/release-name": ReleaseName, "meta.helm.sh/release-namespace": ns}
		return m
	}
	// The Secret holds the API key and the agent key and nothing else: every other setting is plain env on
	// the Deployment, so that a changed setting is a changed Deployment (one rollout), and the release
	// Flotilla keeps (KeptObjects) carries no credential.
	data := map[string]any{}
	// data rather than stringData: `kubectl apply` merges stringData into data, so a key dropped from
	// stringData (an API key no longer given) would stay in the Secret.
	if secrets.APIKey != "" {
		data["TEMPORAL_API_KEY"] = base64.StdEncoding.EncodeToString([]byte(secrets.APIKey))
	}
	if secrets.AgentKey != "" {
		data["FLOTILLA_AGENT_KEY"] = base64.StdEncoding.EncodeToString([]byte(secrets.AgentKey))
	}
	env := []any{
		envVar("TEMPORAL_ADDRESS", cfg.TemporalAddress),
		envVar("TEMPORAL_NAMESPACE", cfg.TemporalNamespace),
		envVar("FLOTILLA_TASK_QUEUE", cfg.TaskQueue),
		envVar("FLOTILLA_CLUSTER", cluster),
		envVar("FLOTILLA_WORKSPACE", workspace),
		envVar("FLOTILLA_LOG_LEVEL", cfg.LogLevel),
		envVar("FLOTILLA_MAX_CONCURRENT_ACTIVITIES", strconv.Itoa(cfg.MaxConcurrentActivities)),
		envVar("FLOTILLA_HELM_QPS", strconv.FormatFloat(cfg.HelmQPS, 'g', -1, 64)),
		envVar("FLOTILLA_HELM_BURST", strconv.Itoa(cfg.HelmBurst)),
		// Helm writes its cache and configuration under $HOME, and the root filesystem is read-only.
		envVar("HOME", "/tmp"),
		// Prometheus metrics at /metrics, and /healthz for the readiness probe: ready once it polls.
		envVar("FLOTILLA_METRICS_LISTEN", fmt.Sprintf(":%d", MetricsPort)),
	}
	selector := map[string]any{"app.kubernetes.io/name": Name}
	return []map[string]any{
		// No labels on the Namespace: an operator may run the agent in a namespace that other things
		// share, and applying the manifest should not relabel it.
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}},
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": kept(Name, true)},
		{
			// The agent installs whatever its cluster's GitRepos deploy: CRDs, cluster roles, objects in any
			// namespace. As Fleet's agent, it is bound to cluster-admin; narrower rights would fail
			// deployments at apply time, far from the registration that could have said so. The binding is
			// named after the namespace so that two agents (two installations) in one cluster keep theirs.
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"metadata": kept(Name+"-"+ns, false),
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": Name, "namespace": ns}},
		},
		{"apiVersion": "v1", "kind": "Secret", "metadata": meta(Name, true), "type": "Opaque", "data": data},
		{
			"apiVersion": "apps/v1", "kind": "Deployment", "metadata": kept(Name, true),
			"spec": map[string]any{
				"replicas": 1,
				// Recreate: the old agent is gone before the new one polls, so two agents of one cluster
				// never apply to it at once during a rollout.
				"strategy": map[string]any{"type": "Recreate"},
				"selector": map[string]any{"matchLabels": selector},
				"template": map[string]any{
					"metadata": map[string]any{
						"labels":      labels,
						"annotations": map[string]any{AnnotationConfigDigest: ConfigDigest(cfg)},
					},
					"spec": map[string]any{
						"serviceAccountName": Name,
						"nodeSelector":       map[string]any{"kubernetes.io/os": "linux"},
						"securityContext": map[string]any{
							"runAsNonRoot":   true,
							"runAsUser":      65532,
							"runAsGroup":     65532,
							"seccompProfile": map[string]any{"type": "RuntimeDefault"},
						},
						"containers": []any{map[string]any{
							"name":    "agent",
							"image":   cfg.Image,
							"command": []any{"/flotilla-agent"},
							// Optional: an agent that dials without an API key needs no Secret, and a Secret
							// deleted by mistake does not keep the agent from starting. env wins over envFrom,
							// so a Secret from an older manifest that still holds settings changes nothing.
							"envFrom": []any{map[string]any{"secretRef": map[string]any{"name": Name, "optional": true}}},
							"env":     env,
							"securityContext": map[string]any{
								"allowPrivilegeEscalation": false,
								"readOnlyRootFilesystem":   true,
								"capabilities":             map[string]any{"drop": []any{"ALL"}},
							},
							"resources": map[string]any{
								"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
							},
							"ports": []any{map[string]any{"name": "metrics", "containerPort": MetricsPort, "protocol": "TCP"}},
							"readinessProbe": map[string]any{
								"httpGet":       map[string]any{"path": "/healthz", "port": "metrics"},
								"periodSeconds": 10, "failureThreshold": 3,
							},
							"volumeMounts": []any{map[string]any{"name": "tmp", "mountPath": "/tmp"}},
						}},
						"volumes": []any{map[string]any{"name": "tmp", "emptyDir": map[string]any{}}},
					},
				},
			},
		},
	}
}

// MetricsPort is where the agent's pod serves Prometheus metrics and its readiness (/healthz).
const MetricsPort = 9090

func envVar(name, value string) map[string]any { return map[string]any{"name": name, "value": value} }

// YAML is Objects as one YAML stream, each object's keys in sorted order, ready for `kubectl apply -f -`.
func YAML(cluster, workspace string, cfg Config, secrets Secrets) ([]byte, error) {
	if err := Check(cluster, workspace, cfg); err != nil {
		return nil, err
	}
	return stream(cluster, Objects(cluster, workspace, cfg, secrets))
}

// KeptObjects are the objects Flotilla keeps as the agent's release (ADR 23): Objects without the
// Namespace, which holds the release and outlives it, and without the Secret, the one place of the API
// key, which therefore never travels through Temporal. Each is the very object Objects makes, so adopting
// what the operator applied changes none of their specs.
func KeptObjects(cluster, workspace string, cfg Config) []map[string]any {
	var out []map[string]any
	for _, o := range Objects(cluster, workspace, cfg, Secrets{}) {
		if k := o["kind"]; k != "Namespace" && k != "Secret" {
			out = append(out, o)
		}
	}
	return out
}

// KeptYAML is KeptObjects as one YAML stream, each document byte for byte the one YAML prints.
func KeptYAML(cluster, workspace string, cfg Config) ([]byte, error) {
	if err := Check(cluster, workspace, cfg); err != nil {
		return nil, err
	}
	return stream(cluster, KeptObjects(cluster, workspace, cfg))
}

func stream(cluster string, objects []map[string]any) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range objects {
		doc, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("cluster %q: agent %s: %w", cluster, o["kind"], err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(doc)
	}
	return b.Bytes(), nil
}
