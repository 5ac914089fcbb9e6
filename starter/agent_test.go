package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/internal/agentmanifest"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// Every wrong combination of `cluster add` flags is refused before the CLI connects (the address is one
// nothing listens on), naming the flags.
func TestClusterAddRefusesAKubeconfigAndAnAgentTogetherOrNeither(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "edge.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600))
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{nil, "--kubeconfig PATH or --agent is required (a kubeconfig on the worker's host, or an agent in the cluster that dials out)"},
		{[]string{"--agent", "--kubeconfig", kubeconfig}, "--agent and --kubeconfig/--context exclude each other: the cluster is reached " +
			"through a kubeconfig on the worker's host, or through an agent in it that dials out"},
		{[]string{"--agent", "--context", "prod"}, "--agent and --kubeconfig/--context exclude each other: the cluster is reached " +
			"through a kubeconfig on the worker's host, or through an agent in it that dials out"},
		{[]string{"--kubeconfig", kubeconfig, "--agent-log-level", "debug", "--agent-image", "x"}, "--agent-image, --agent-log-level: only with --agent"},
		{[]string{"--agent", "--agent-log-level", "verbose"}, `cluster "edge": spec.agent.logLevel "verbose": must be debug, info, warn or error`},
		{[]string{"--agent", "--agent-namespace", "Ops"}, `cluster "edge": spec.agent.namespace "Ops": must be a DNS label (lowercase letters, digits, '-'; at most 63 characters)`},
		{[]string{"--agent", "--agent-max-concurrent-activities", "-2"}, `cluster "edge": spec.agent.maxConcurrentActivities -2: must not be negative`},
		{[]string{"--agent", "--agent-helm-qps", "0"}, "--agent-helm-qps 0: must be more than 0 (leave it out for the default, 50)"},
		{[]string{"--agent", "--agent-temporal-address", "temporal"}, `cluster "edge": spec.agent.temporalAddress "temporal": must be host:port`},
	} {
		_, _, err := flotilla(t, append([]string{"--address", "127.0.0.1:1", "cluster", "add", "edge"}, tc.args...)...)
		require.EqualError(t, err, tc.err, "%v", tc.args)
	}
}

// parseAdd is the cluster `cluster add edge ARGS...` would register.
func parseAdd(t *testing.T, args ...string) fleet.Cluster {
	t.Helper()
	var f clusterAddFlags
	fs := pflag.NewFlagSet("add", pflag.ContinueOnError)
	f.add(fs)
	require.NoError(t, fs.Parse(args))
	c, err := f.cluster(fs, "edge", "fleet-default")
	require.NoError(t, err)
	return c
}

// Only the agent settings the operator gave go into the inventory: one left out takes its default when
// the manifest is made, so a later release's default reaches it; one given is kept even as the default.
func TestClusterAddRegistersOnlyTheAgentSettingsGiven(t *testing.T) {
	c := parseAdd(t, "--agent")
	require.Equal(t, &fleet.ClusterAgent{}, c.Spec.Agent)
	require.Empty(t, c.Spec.KubeConfigPath)
	b, err := json.Marshal(c.Spec)
	require.NoError(t, err)
	require.JSONEq(t, `{"agent":{}}`, string(b))

	c = parseAdd(t, "--agent", "--agent-log-level", "info", "--agent-helm-qps", "12.5", "--agent-temporal-address", "temporal.example.com:7233",
		"--label", "env=edge")
	require.Equal(t, &fleet.ClusterAgent{LogLevel: "info", HelmQPS: 12.5, TemporalAddress: "temporal.example.com:7233"}, c.Spec.Agent)
	require.Equal(t, map[string]string{"env": "edge"}, c.Metadata.Labels)

	c = parseAdd(t, "--agent", "--agent-image", "registry.example.com/flotilla:1.4.0", "--agent-namespace", "ops",
		"--agent-max-concurrent-activities", "2", "--agent-helm-burst", "10", "--agent-temporal-namespace", "edge")
	require.Equal(t, &fleet.ClusterAgent{Image: "registry.example.com/flotilla:1.4.0", Namespace: "ops", MaxConcurrentActivities: 2,
		HelmBurst: 10, TemporalNamespace: "edge"}, c.Spec.Agent)
}

func agentInventory(agents ...fleet.Cluster) inventory.Inventory {
	var inv inventory.Inventory
	inv.UpsertCluster(fleet.Cluster{Metadata: fleet.ObjectMeta{Name: "core"}, Spec: fleet.ClusterSpec{KubeConfigPath: "/etc/flotilla/core.kubeconfig"}})
	for _, c := range agents {
		inv.UpsertCluster(c)
	}
	return inv
}

func agentCluster(ns, name string, a fleet.ClusterAgent) fleet.Cluster {
	return fleet.Cluster{Metadata: fleet.ObjectMeta{Name: name, Namespace: ns}, Spec: fleet.ClusterSpec{Agent: &a}}
}

var testInstallation = agentmanifest.Installation{TemporalAddress: "temporal.example.com:7233", TemporalNamespace: "prod", TaskQueue: "flotilla", Version: "1.4.0"}

// `agent manifest` prints the agent of a registered agent-mode cluster, its settings as supplied and the
// rest from this CLI's installation, and refuses a cluster that has no agent.
func TestAgentManifestPrintsTheAgentOfAnAgentModeCluster(t *testing.T) {
	inv := agentInventory(
		agentCluster("", "edge", fleet.ClusterAgent{}),
		agentCluster("", "edge-info", fleet.ClusterAgent{LogLevel: "info"}),
		agentCluster("team-a", "edge", fleet.ClusterAgent{LogLevel: "debug", TemporalNamespace: "team-a"}),
	)
	out, err := agentManifest(inv, "fleet-default", "edge", testInstallation, agentmanifest.Secrets{})
	require.NoError(t, err)
	s := string(out)
	for _, kind := range []string{"Namespace", "ServiceAccount", "ClusterRoleBinding", "Secret", "Deployment"} {
		require.Contains(t, s, "\nkind: "+kind+"\n")
	}
	require.Contains(t, s, "image: flotilla:1.4.0")
	require.NotContains(t, s, "TEMPORAL_API_KEY")
	digest := agentmanifest.ConfigDigest(agentmanifest.Effective(fleet.ClusterAgent{}, testInstallation))
	require.Contains(t, s, agentmanifest.AnnotationConfigDigest+": "+digest)

	info, err := agentManifest(inv, "", "edge-info", testInstallation, agentmanifest.Secrets{})
	require.NoError(t, err)
	require.Contains(t, string(info), digest, "spelling out the default log level is the same agent")

	team, err := agentManifest(inv, "team-a", "edge", testInstallation, agentmanifest.Secrets{APIKey: "key-123", AgentKey: "agent-key"})
	require.NoError(t, err)
	require.NotContains(t, string(team), digest)
	require.Contains(t, string(team), "TEMPORAL_API_KEY: a2V5LTEyMw==")
	require.Contains(t, string(team), "FLOTILLA_AGENT_KEY: YWdlbnQta2V5", "the agent key goes into the Secret")
	require.Equal(t, 1, strings.Count(string(team), "agent-key")+strings.Count(string(team), "YWdlbnQta2V5"), "and nowhere else")
	require.Contains(t, string(team), "value: debug")

	_, err = agentManifest(inv, "", "core", testInstallation, agentmanifest.Secrets{})
	require.EqualError(t, err, `cluster "core" is not in agent mode: the worker reaches it through the kubeconfig /etc/flotilla/core.kubeconfig, `+
		"and no agent runs in it (register it with `flotilla cluster add --replace core --agent` to move it to an agent)")
	_, err = agentManifest(inv, "team-b", "edge", testInstallation, agentmanifest.Secrets{})
	require.EqualError(t, err, `cluster "team-b/edge" is not registered`)

	_, err = agentManifest(inv, "", "edge", agentmanifest.Installation{TemporalAddress: "t:7233", TemporalNamespace: "d", TaskQueue: "flotilla"}, agentmanifest.Secrets{})
	require.ErrorContains(t, err, "has no tag", "a development build names no image of its own")
}

// The API key comes from a file, never from a command line, and an unreadable or empty file stops the
// command before it connects.
func TestAgentManifestReadsTheAPIKeyFromAFile(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	_, _, err := flotilla(t, "--address", "127.0.0.1:1", "agent", "manifest", "edge", "--api-key-file", empty)
	require.EqualError(t, err, "--api-key-file "+empty+": the file is empty")
	_, _, err = flotilla(t, "--address", "127.0.0.1:1", "agent", "manifest", "edge", "--api-key-file", filepath.Join(t.TempDir(), "none"))
	require.ErrorContains(t, err, "--api-key-file: open ")
}

// fakeQueues answers DescribeTaskQueue from a table of pollers, and records what it was asked.
type fakeQueues struct {
	mu      sync.Mutex
	asked   []string
	pollers map[string][]*taskqueuepb.PollerInfo
	fail    map[string]error
}

func (f *fakeQueues) DescribeTaskQueue(_ context.Context, q string, typ enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, q+"/"+typ.String())
	if err := f.fail[q]; err != nil {
		return nil, err
	}
	return &workflowservice.DescribeTaskQueueResponse{Pollers: f.pollers[q]}, nil
}

// `cluster list` shows each cluster's mode and, for an agent, when its most recent poller last polled and
// the version it names; it asks nothing about kubeconfig clusters, and an answer it cannot get is
// "unknown", not a failed listing.
func TestClusterListShowsWhenEachAgentWasLastSeen(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	inv := agentInventory(
		agentCluster("", "edge-1", fleet.ClusterAgent{}),
		agentCluster("", "edge-2", fleet.ClusterAgent{}),
		agentCluster("", "edge-3", fleet.ClusterAgent{}),
	)
	q := func(name string) string { return api.AgentTaskQueue("flotilla", "", name) }
	poller := func(id string, ago time.Duration) *taskqueuepb.PollerInfo {
		return &taskqueuepb.PollerInfo{Identity: id, LastAccessTime: timestamppb.New(now.Add(-ago))}
	}
	fake := &fakeQueues{
		pollers: map[string][]*taskqueuepb.PollerInfo{q("edge-1"): {
			poller(api.AgentIdentity("1.3.0", "edge-1", "old-pod"), 5*time.Minute),
			poller(api.AgentIdentity("1.4.0", "edge-1", "new-pod"), 12*time.Second),
		}},
		fail: map[string]error{q("edge-3"): errors.New("permission denied")},
	}
	agents := describeAgents(context.Background(), fake, "flotilla", inv.Clusters)
	require.ElementsMatch(t, []string{q("edge-1") + "/Activity", q("edge-2") + "/Activity",
		q("edge-3") + "/Activity"}, fake.asked, "the kubeconfig cluster's queue is not asked about")

	var out bytes.Buffer
	require.NoError(t, printClusters(&out, "table", false, inv, agents, now))
	require.Equal(t, strings.Join([]string{
		"NAME     STATE        LABELS   KUBECONFIG                      MODE         LAST SEEN   AGENT VERSION",
		"core     registered            /etc/flotilla/core.kubeconfig   kubeconfig   -           -",
		"edge-1   registered            -                               agent        12s ago     1.4.0",
		"edge-2   registered            -                               agent        never       -",
		"edge-3   registered            -                               agent        unknown     unknown",
		""}, "\n"), out.String())

	out.Reset()
	require.NoError(t, printClusters(&out, "json", false, inv, agents, now))
	var listing struct {
		Generation int64            `json:"generation"`
		Clusters   []map[string]any `json:"clusters"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &listing))
	require.Equal(t, inv.Generation, listing.Generation)
	core, edge1, edge2, edge3 := listing.Clusters[0], listing.Clusters[1], listing.Clusters[2], listing.Clusters[3]
	require.Equal(t, "kubeconfig", core["mode"])
	require.Equal(t, "/etc/flotilla/core.kubeconfig", core["spec"].(map[string]any)["kubeConfigPath"], "the inventory's own keys stay")
	require.Equal(t, "core", core["metadata"].(map[string]any)["name"])
	require.NotContains(t, core, "lastSeen")
	require.Equal(t, "agent", edge1["mode"])
	require.Equal(t, "2026-05-01T11:59:48Z", edge1["lastSeen"])
	require.Equal(t, "1.4.0", edge1["agentVersion"])
	require.NotContains(t, edge2, "lastSeen")
	require.Equal(t, "permission denied", edge3["agentError"])
}

// An operator makes the installation key once, gives it to every worker, and derives each agent's key from
// it: `agent key` prints what `agent manifest --installation-key-file` puts in the agent's Secret.
func TestTheInstallationKeyAndAnAgentsKey(t *testing.T) {
	out, _, err := flotilla(t, "installation-key")
	require.NoError(t, err)
	inst, err := agentkey.Parse(out, "installation-key's output")
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "installation.key")
	require.NoError(t, os.WriteFile(file, []byte(out), 0o600))

	out, _, err = flotilla(t, "agent", "key", "-n", "team-a", "edge", "--installation-key-file", file)
	require.NoError(t, err)
	require.Equal(t, inst.ForCluster("team-a", "edge").Encode()+"\n", out)
	_, _, err = flotilla(t, "agent", "key", "edge")
	require.ErrorContains(t, err, "--installation-key-file (or FLOTILLA_INSTALLATION_KEY_FILE) is required")
}
