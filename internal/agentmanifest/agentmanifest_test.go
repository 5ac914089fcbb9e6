package agentmanifest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
)

var inst = Installation{TemporalAddress: "temporal.example.com:7233", TemporalNamespace: "prod", TaskQueue: "flotilla", Version: "1.4.0"}

// Fleet's seed bug 002: an agent setting spelled out as its default was compared with the default and
// found different, so agents were redeployed for nothing. Here only effective configurations are compared:
// leaving a setting out and spelling out its default are the same agent; another value is another agent.
func TestASettingSpelledOutAsItsDefaultIsTheSameAgent(t *testing.T) {
	digest := func(a fleet.ClusterAgent) string { return ConfigDigest(Effective(a, inst)) }
	none := digest(fleet.ClusterAgent{})
	require.Equal(t, none, digest(fleet.ClusterAgent{LogLevel: "info"}))
	require.Equal(t, none, digest(fleet.ClusterAgent{Namespace: "flotilla-system", MaxConcurrentActivities: 8, HelmQPS: 50, HelmBurst: 100,
		Image: "flotilla:1.4.0", TemporalAddress: "temporal.example.com:7233", TemporalNamespace: "prod"}), "every default spelled out")
	require.NotEqual(t, none, digest(fleet.ClusterAgent{LogLevel: "debug"}))
	require.NotEqual(t, none, digest(fleet.ClusterAgent{HelmQPS: 50.5}))
	require.NotEqual(t, none, ConfigDigest(Effective(fleet.ClusterAgent{}, Installation{TemporalAddress: "temporal.example.com:7233",
		TemporalNamespace: "prod", TaskQueue: "flotilla-staging", Version: "1.4.0"})), "the installation's task queue is part of it")
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, none)
}

// Every setting the operator supplied wins; every other one is its default or the installation's.
func TestTheEffectiveConfigurationTakesWhatWasSuppliedAndDefaultsTheRest(t *testing.T) {
	require.Equal(t, Config{Image: "flotilla:1.4.0", Namespace: "flotilla-system", LogLevel: "info", MaxConcurrentActivities: 8,
		HelmQPS: 50, HelmBurst: 100, TemporalAddress: "temporal.example.com:7233", TemporalNamespace: "prod", TaskQueue: "flotilla"},
		Effective(fleet.ClusterAgent{}, inst))
	require.Equal(t, Config{Image: "registry.example.com/flotilla:1.3.9", Namespace: "ops", LogLevel: "warn", MaxConcurrentActivities: 2,
		HelmQPS: 5, HelmBurst: 10, TemporalAddress: "edge-temporal:7233", TemporalNamespace: "edge", TaskQueue: "flotilla"},
		Effective(fleet.ClusterAgent{Image: "registry.example.com/flotilla:1.3.9", Namespace: "ops", LogLevel: "warn", MaxConcurrentActivities: 2,
			HelmQPS: 5, HelmBurst: 10, TemporalAddress: "edge-temporal:7233", TemporalNamespace: "edge"}, inst))
}

// objects parses a YAML stream back into its documents, each as the typed Kubernetes object of its kind,
// refusing a field the type does not have.
func objects(t *testing.T, stream []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		var meta struct{ Kind string }
		require.NoError(t, yaml.Unmarshal(doc, &meta))
		var typed any
		switch meta.Kind {
		case "Namespace":
			typed = &corev1.Namespace{}
		case "ServiceAccount":
			typed = &corev1.ServiceAccount{}
		case "ClusterRoleBinding":
			typed = &rbacv1.ClusterRoleBinding{}
		case "Secret":
			typed = &corev1.Secret{}
		case "Deployment":
			typed = &appsv1.Deployment{}
		default:
			t.Fatalf("unexpected kind %q", meta.Kind)
		}
		require.NoError(t, yaml.UnmarshalStrict(doc, typed), "%s", doc)
		require.NotContains(t, out, meta.Kind)
		out[meta.Kind] = doc
	}
}

// The manifest is Kubernetes YAML of the expected kinds: one agent that only its own cluster's settings
// reach, run as non-root from a read-only filesystem, one pod at a time.
func TestTheManifestIsTheAgentsKubernetesObjects(t *testing.T) {
	cfg := Effective(fleet.ClusterAgent{LogLevel: "debug", HelmQPS: 12.5}, inst)
	out, err := YAML("edge-1", "", cfg, Secrets{})
	require.NoError(t, err)
	docs := objects(t, out)
	require.Len(t, docs, 5)

	var dep appsv1.Deployment
	require.NoError(t, yaml.Unmarshal(docs["Deployment"], &dep))
	require.Equal(t, "flotilla-system", dep.Namespace)
	require.Equal(t, int32(1), *dep.Spec.Replicas)
	require.Equal(t, appsv1.RecreateDeploymentStrategyType, dep.Spec.Strategy.Type)
	require.Equal(t, ConfigDigest(cfg), dep.Spec.Template.Annotations[AnnotationConfigDigest])
	pod := dep.Spec.Template.Spec
	require.Equal(t, "flotilla-agent", pod.ServiceAccountName)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
	c := pod.Containers[0]
	require.Equal(t, "flotilla:1.4.0", c.Image)
	require.Equal(t, []string{"/flotilla-agent"}, c.Command)
	require.Empty(t, c.Args, "settings travel in the environment, never on a command line")
	require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.Equal(t, "flotilla-agent", c.EnvFrom[0].SecretRef.Name)
	require.True(t, *c.EnvFrom[0].SecretRef.Optional, "an agent without an API key needs no Secret")
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	require.Equal(t, map[string]string{"TEMPORAL_ADDRESS": "temporal.example.com:7233", "TEMPORAL_NAMESPACE": "prod",
		"FLOTILLA_TASK_QUEUE": "flotilla", "FLOTILLA_CLUSTER": "edge-1", "FLOTILLA_WORKSPACE": "fleet-default",
		"FLOTILLA_LOG_LEVEL": "debug", "FLOTILLA_MAX_CONCURRENT_ACTIVITIES": "8",
		"FLOTILLA_HELM_QPS": "12.5", "FLOTILLA_HELM_BURST": "100", "HOME": "/tmp", "FLOTILLA_METRICS_LISTEN": ":9090"}, env,
		"every setting that is no secret is plain env")
	require.False(t, c.Resources.Requests.Cpu().IsZero())
	// Prometheus scrapes the named port; the pod is ready once the agent polls its queue.
	require.Equal(t, int32(9090), c.Ports[0].ContainerPort)
	require.Equal(t, "metrics", c.Ports[0].Name)
	require.Equal(t, "/healthz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, "metrics", c.ReadinessProbe.HTTPGet.Port.String())

	var crb rbacv1.ClusterRoleBinding
	require.NoError(t, yaml.Unmarshal(docs["ClusterRoleBinding"], &crb))
	require.Equal(t, "cluster-admin", crb.RoleRef.Name)
	require.Equal(t, rbacv1.Subject{Kind: "ServiceAccount", Name: "flotilla-agent", Namespace: "flotilla-system"}, crb.Subjects[0])

	var sec corev1.Secret
	require.NoError(t, yaml.Unmarshal(docs["Secret"], &sec))
	require.Empty(t, sec.Data, "without an API key the Secret holds nothing")

	again, err := YAML("edge-1", "fleet-default", cfg, Secrets{})
	require.NoError(t, err)
	require.Equal(t, string(out), string(again), "the same agent, the same bytes")
}

// A Temporal API key is written only when given, and then only into the Secret.
func TestTheAPIKeyAppearsOnlyWhenGivenAndOnlyInTheSecret(t *testing.T) {
	const key = "tmprl-api-key-0123456789"
	encoded := base64.StdEncoding.EncodeToString([]byte(key))
	cfg := Effective(fleet.ClusterAgent{}, inst)

	out, err := YAML("edge-1", "team-a", cfg, Secrets{})
	require.NoError(t, err)
	require.NotContains(t, string(out), "TEMPORAL_API_KEY")

	out, err = YAML("edge-1", "team-a", cfg, Secrets{APIKey: key})
	require.NoError(t, err)
	require.NotContains(t, string(out), key, "never in clear text")
	docs := objects(t, out)
	require.Contains(t, string(docs["Secret"]), encoded)
	for kind, doc := range docs {
		if kind != "Secret" {
			require.NotContains(t, string(doc), encoded, kind)
			require.NotContains(t, string(doc), "TEMPORAL_API_KEY", kind)
		}
	}
}

func TestWhatCannotMakeAnAgentIsRefused(t *testing.T) {
	cfg := Effective(fleet.ClusterAgent{}, inst)
	_, err := YAML("Edge_1", "", cfg, Secrets{})
	require.EqualError(t, err, `cluster name "Edge_1": must be a DNS label`)
	noVersion := Effective(fleet.ClusterAgent{}, Installation{TemporalAddress: "t:7233", TemporalNamespace: "default", TaskQueue: "flotilla"})
	_, err = YAML("edge-1", "", noVersion, Secrets{})
	require.ErrorContains(t, err, `cluster "edge-1": the agent's image "flotilla:" has no tag`)
	noVersion.Image = "flotilla:dev"
	_, err = YAML("edge-1", "", noVersion, Secrets{})
	require.NoError(t, err)
}

// The release Flotilla keeps is the manifest without its Namespace and Secret, and its Deployment is byte
// for byte the one the operator applied: adopting it changes no spec, so it rolls nothing.
func TestTheKeptObjectsAreTheManifestsWithoutNamespaceAndSecret(t *testing.T) {
	const key = "tmprl-api-key-0123456789"
	cfg := Effective(fleet.ClusterAgent{LogLevel: "debug"}, inst)
	full, err := YAML("edge-1", "team-a", cfg, Secrets{APIKey: key})
	require.NoError(t, err)
	kept, err := KeptYAML("edge-1", "team-a", cfg)
	require.NoError(t, err)
	fullDocs, keptDocs := objects(t, full), objects(t, kept)
	require.Len(t, keptDocs, 3)
	require.NotContains(t, keptDocs, "Secret")
	require.NotContains(t, keptDocs, "Namespace")
	for kind, doc := range keptDocs {
		require.Equal(t, string(fullDocs[kind]), string(doc), kind)
	}
	var dep appsv1.Deployment
	require.NoError(t, yaml.Unmarshal(keptDocs["Deployment"], &dep))
	require.Equal(t, map[string]string{"meta.helm.sh/release-name": "flotilla-agent", "meta.helm.sh/release-namespace": "flotilla-system"},
		dep.Annotations, "Helm's ownership is there before Helm adopts it")
	require.Equal(t, "Helm", dep.Labels["app.kubernetes.io/managed-by"])
	require.NotContains(t, dep.Spec.Template.Labels, "app.kubernetes.io/managed-by", "the pod template is what the Deployment rolls on")
	require.NotContains(t, string(kept), "TEMPORAL_API_KEY")
	require.NotContains(t, string(kept), base64.StdEncoding.EncodeToString([]byte(key)))
}
