package inventory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func cluster(name string, labels map[string]string) fleet.Cluster {
	return fleet.Cluster{Metadata: fleet.ObjectMeta{Name: name, Labels: labels},
		Spec: fleet.ClusterSpec{KubeConfigPath: "/etc/flotilla/" + name + ".kubeconfig"}}
}

func group(name, env string) fleet.ClusterGroup {
	return fleet.ClusterGroup{APIVersion: fleet.APIVersion, Kind: fleet.KindClusterGroup, Metadata: fleet.ObjectMeta{Name: name},
		Spec: fleet.ClusterGroupSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": env}}}}
}

// `flotilla cluster add` sends a cluster without kind or namespace, `flotilla apply -f` a Cluster document
// with both: the same cluster either way, so registering it again is no change and no GitRepo plans again.
func TestAClusterRegisteredAgainAsItIsChangesNothing(t *testing.T) {
	var inv Inventory
	require.True(t, inv.UpsertCluster(cluster("edge-2", map[string]string{"env": "prod"})))
	require.True(t, inv.UpsertCluster(cluster("edge-1", nil)))
	require.Equal(t, int64(2), inv.Generation)
	require.Equal(t, "edge-1", inv.Clusters[0].Metadata.Name, "kept in name order")

	applied := cluster("edge-2", map[string]string{"env": "prod"})
	applied.APIVersion, applied.Kind, applied.Metadata.Namespace = fleet.APIVersion, fleet.KindCluster, fleet.DefaultNamespace
	require.False(t, inv.UpsertCluster(applied))
	require.NoError(t, inv.CheckAdd(cluster("edge-2", map[string]string{"env": "prod"})), "adding it as it is is no error")
	require.Equal(t, int64(2), inv.Generation)

	require.EqualError(t, inv.CheckAdd(cluster("edge-2", map[string]string{"env": "dev"})),
		`cluster "edge-2" is registered already with other labels; add --replace to replace its settings `+
			`(GitRepos that select it by label may then stop or start deploying to it)`)
	require.True(t, inv.UpsertCluster(cluster("edge-2", map[string]string{"env": "dev"})))
	require.Equal(t, int64(3), inv.Generation)
	c, _ := inv.Cluster("", "edge-2")
	require.Equal(t, "dev", c.Metadata.Labels["env"])
}

// A ClusterGroup follows the clusters' rule: the same document applied again, with or without its
// namespace written out, is no change; another selector is.
func TestAGroupAppliedAgainAsItIsChangesNothing(t *testing.T) {
	var inv Inventory
	require.True(t, inv.UpsertGroup(group("prod", "prod")))
	again := group("prod", "prod")
	again.Metadata.Namespace = fleet.DefaultNamespace
	require.False(t, inv.UpsertGroup(again))
	require.False(t, inv.UpsertGroup(group("prod", "prod")))
	require.Equal(t, int64(1), inv.Generation)

	require.True(t, inv.UpsertGroup(group("prod", "production")))
	require.Equal(t, int64(2), inv.Generation)
	require.Equal(t, "production", inv.Groups[0].Spec.Selector.MatchLabels["env"])
}

// Removing a name that is not registered, cluster or group, is no change: `flotilla cluster remove` run
// twice does not make every GitRepo plan again.
func TestRemovingWhatIsNotRegisteredChangesNothing(t *testing.T) {
	var inv Inventory
	inv.UpsertCluster(cluster("edge-1", nil))
	inv.UpsertGroup(group("prod", "prod"))
	require.Equal(t, int64(2), inv.Generation)

	require.False(t, inv.RemoveCluster("", "edge-9"))
	require.False(t, inv.RemoveGroup("", "staging"))
	require.Equal(t, int64(2), inv.Generation)

	require.True(t, inv.RemoveCluster("", "edge-1"))
	require.True(t, inv.RemoveGroup("", "prod"))
	require.Empty(t, inv.Clusters)
	require.Empty(t, inv.Groups)
	require.Equal(t, int64(4), inv.Generation)
}

// As in Fleet, a cluster or group is known by its workspace and its name: team-a and team-b may each
// register an "edge", and changing or removing one leaves the other. fleet-default is the workspace of
// one that names none, so everything registered before workspaces stays where it was.
func TestEachWorkspaceHasClustersOfItsOwn(t *testing.T) {
	in := func(ns string, c fleet.Cluster) fleet.Cluster {
		c.Metadata.Namespace = ns
		return c
	}
	var inv Inventory
	require.True(t, inv.UpsertCluster(cluster("edge", nil)))
	require.True(t, inv.UpsertCluster(in("team-b", cluster("edge", map[string]string{"team": "b"}))))
	require.True(t, inv.UpsertCluster(in("team-a", cluster("edge", map[string]string{"team": "a"}))))
	require.True(t, inv.UpsertCluster(in("team-a", cluster("api", nil))))
	require.Len(t, inv.Clusters, 4)
	var order []string
	for _, c := range inv.Clusters {
		order = append(order, c.Metadata.Namespace+"/"+c.Metadata.Name)
	}
	require.Equal(t, []string{"team-a/api", "fleet-default/edge", "team-a/edge", "team-b/edge"}, order, "by name, then workspace")

	a, ok := inv.Cluster("team-a", "edge")
	require.True(t, ok)
	require.Equal(t, "a", a.Metadata.Labels["team"])
	def, ok := inv.Cluster("", "edge")
	require.True(t, ok)
	require.Equal(t, fleet.DefaultNamespace, def.Metadata.Namespace)
	_, ok = inv.Cluster("team-b", "api")
	require.False(t, ok)

	require.EqualError(t, inv.CheckAdd(in("team-a", cluster("edge", map[string]string{"team": "x"}))),
		`cluster "team-a/edge" is registered already with other labels; add --replace to replace its settings `+
			`(GitRepos that select it by label may then stop or start deploying to it)`)
	require.NoError(t, inv.CheckAdd(in("team-c", cluster("edge", nil))), "team-c has no edge yet")

	require.True(t, inv.RemoveCluster("team-a", "edge"))
	_, ok = inv.Cluster("team-b", "edge")
	require.True(t, ok, "team-b's edge stays")
	_, ok = inv.Cluster("", "edge")
	require.True(t, ok, "fleet-default's edge stays")

	require.True(t, inv.UpsertGroup(group("prod", "prod")))
	teamGroup := group("prod", "prod")
	teamGroup.Metadata.Namespace = "team-a"
	require.True(t, inv.UpsertGroup(teamGroup), "another workspace's group of the same name")
	require.True(t, inv.RemoveGroup("team-a", "prod"))
	require.Len(t, inv.Groups, 1)
	require.Equal(t, fleet.DefaultNamespace, inv.Groups[0].Metadata.Namespace)

	ws := inv.InWorkspace("team-b")
	require.Len(t, ws.Clusters, 1)
	require.Equal(t, "b", ws.Clusters[0].Metadata.Labels["team"])
	require.Empty(t, ws.Groups)
	require.Len(t, inv.InWorkspace("").Clusters, 1)
}

func TestAWorkspaceIsADNSLabel(t *testing.T) {
	c := cluster("edge", nil)
	c.Metadata.Namespace = "Team_A"
	require.EqualError(t, ValidateCluster(c), `cluster "Team_A/edge": metadata.namespace "Team_A": must be a DNS label`)
	g := group("prod", "prod")
	g.Metadata.Namespace = "team/a"
	require.EqualError(t, ValidateGroup(g), `cluster group "team/a/prod": metadata.namespace "team/a": must be a DNS label`)
}

// A cluster leaves in one step that GitRepos see (a new generation) and stays registered, kubeconfig and
// all, until it is forgotten; leaving again changes nothing, except that keeping its workloads, once asked
// for, sticks; a leaving cluster's settings cannot change under its uninstall.
func TestALeavingClusterStaysRegisteredUntilItIsForgotten(t *testing.T) {
	var inv Inventory
	inv.UpsertCluster(cluster("edge-1", nil))
	inv.UpsertCluster(cluster("edge-2", nil))
	require.EqualError(t, inv.CheckLeave(LeaveInput{Name: "edge-9"}), `cluster "edge-9" is not registered`)

	for _, tc := range []struct {
		name        string
		in          LeaveInput
		changed     bool
		keep        bool
		generation  int64
		leavingFrom int64
	}{
		{"edge-2 leaves", LeaveInput{Name: "edge-2"}, true, false, 3, 3},
		{"edge-2 leaves again", LeaveInput{Name: "edge-2"}, false, false, 3, 3},
		{"then keeps its workloads", LeaveInput{Name: "edge-2", KeepWorkloads: true}, true, true, 4, 4},
		{"and keeps keeping them", LeaveInput{Name: "edge-2"}, false, true, 4, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, inv.CheckLeave(tc.in))
			require.Equal(t, tc.changed, inv.Leave(tc.in))
			require.Equal(t, tc.generation, inv.Generation)
			l, ok := inv.LeavingCluster("", "edge-2")
			require.True(t, ok)
			require.Equal(t, Leaving{Name: "edge-2", KeepWorkloads: tc.keep, Generation: tc.leavingFrom}, l)
		})
	}
	c, ok := inv.Cluster("", "edge-2")
	require.True(t, ok, "a leaving cluster stays registered")
	require.Equal(t, "/etc/flotilla/edge-2.kubeconfig", c.Spec.KubeConfigPath, "its uninstall needs its kubeconfig")
	_, ok = inv.LeavingCluster("", "edge-1")
	require.False(t, ok)

	require.ErrorContains(t, inv.CheckNotLeaving("", "edge-2"), `cluster "edge-2" is leaving`)
	require.NoError(t, inv.CheckNotLeaving("", "edge-1"))

	require.True(t, inv.RemoveCluster("", "edge-2"))
	require.Empty(t, inv.Leaving, "forgetting a leaving cluster ends its leaving")
	require.Equal(t, int64(5), inv.Generation)
	require.False(t, inv.Leave(LeaveInput{Name: "edge-2"}), "a cluster no longer registered cannot leave")

	// Leaving is per workspace: team-a's edge-1 leaving is not fleet-default's.
	teamEdge := cluster("edge-1", nil)
	teamEdge.Metadata.Namespace = "team-a"
	inv.UpsertCluster(teamEdge)
	require.True(t, inv.Leave(LeaveInput{Name: "edge-1", Namespace: "team-a"}))
	_, ok = inv.LeavingCluster("", "edge-1")
	require.False(t, ok)
	require.Len(t, inv.LeavingIn("team-a"), 1)
	require.Len(t, inv.InWorkspace("team-a").Leaving, 1, "cluster list -n team-a shows it leaving")
	require.Empty(t, inv.LeavingIn(""))
	require.NoError(t, inv.CheckNotLeaving("", "edge-1"))
	require.ErrorContains(t, inv.CheckNotLeaving("team-a", "edge-1"), "flotilla cluster remove edge-1 -n team-a")
}

func agentCluster(name string, a fleet.ClusterAgent) fleet.Cluster {
	return fleet.Cluster{Metadata: fleet.ObjectMeta{Name: name}, Spec: fleet.ClusterSpec{Agent: &a}}
}

// A cluster is reached one way: through a kubeconfig on the worker's host, a kubeconfig Secret in the
// management cluster, or its own agent. More than one or none is refused, naming the cluster and the fields.
func TestAClusterHasOneWayIn(t *testing.T) {
	require.NoError(t, ValidateCluster(cluster("edge", nil)))
	require.NoError(t, ValidateCluster(agentCluster("edge", fleet.ClusterAgent{})), "every agent setting has a default")
	fromSecret := fleet.Cluster{Metadata: fleet.ObjectMeta{Name: "edge", Namespace: "team-a"},
		Spec: fleet.ClusterSpec{KubeConfigSecret: "edge-kubeconfig", KubeConfigSecretNamespace: "team-a"}}
	require.NoError(t, ValidateCluster(fromSecret))

	both := cluster("edge", nil)
	both.Spec.Agent = &fleet.ClusterAgent{}
	require.EqualError(t, ValidateCluster(both), `cluster "edge": spec.kubeConfigPath and spec.agent are all set: give one `+
		`(a kubeconfig on the worker's host, a kubeconfig Secret in the management cluster, or an agent in the cluster that dials out)`)
	pathAndSecret := cluster("edge", nil)
	pathAndSecret.Spec.KubeConfigSecret = "edge-kubeconfig"
	require.ErrorContains(t, ValidateCluster(pathAndSecret), `spec.kubeConfigPath and spec.kubeConfigSecret are all set`)

	neither := fleet.Cluster{Metadata: fleet.ObjectMeta{Name: "edge", Namespace: "team-a"}}
	require.EqualError(t, ValidateCluster(neither), `cluster "team-a/edge": spec.kubeConfigPath, spec.kubeConfigSecret or spec.agent is required `+
		`(a kubeconfig file on the worker's host, a kubeconfig Secret in the management cluster, or an agent in the cluster that dials out)`)

	withContext := agentCluster("edge", fleet.ClusterAgent{})
	withContext.Spec.KubeConfigContext = "prod"
	require.ErrorContains(t, ValidateCluster(withContext), `cluster "edge": spec.kubeConfigContext "prod" is set on an agent-mode cluster`)
}

// A workspace's cluster reads its kubeconfig Secret in its own namespace, never another workspace's.
func TestAKubeconfigSecretIsReadInTheClustersOwnNamespace(t *testing.T) {
	other := fleet.Cluster{Metadata: fleet.ObjectMeta{Name: "edge", Namespace: "team-a"},
		Spec: fleet.ClusterSpec{KubeConfigSecret: "edge-kubeconfig", KubeConfigSecretNamespace: "team-b"}}
	require.EqualError(t, ValidateCluster(other), `cluster "team-a/edge": spec.kubeConfigSecretNamespace "team-b": `+
		`a kubeconfig Secret is read in the cluster's own namespace "team-a" only`)
	inDefault := fleet.Cluster{Metadata: fleet.ObjectMeta{Name: "edge"},
		Spec: fleet.ClusterSpec{KubeConfigSecret: "edge-kubeconfig", KubeConfigSecretNamespace: "fleet-default"}}
	require.NoError(t, ValidateCluster(inDefault))
}

func TestAnAgentsSettingsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		agent fleet.ClusterAgent
		err   string
	}{
		{fleet.ClusterAgent{LogLevel: "debug", Namespace: "ops", MaxConcurrentActivities: 2, HelmQPS: 5.5, HelmBurst: 10,
			TemporalAddress: "temporal.example.com:7233", TemporalNamespace: "edge", Image: "registry.example.com/flotilla:1.2.3"}, ""},
		{fleet.ClusterAgent{LogLevel: "verbose"}, `cluster "edge": spec.agent.logLevel "verbose": must be debug, info, warn or error`},
		{fleet.ClusterAgent{Namespace: "Flotilla_System"}, `cluster "edge": spec.agent.namespace "Flotilla_System": must be a DNS label ` +
			`(lowercase letters, digits, '-'; at most 63 characters)`},
		{fleet.ClusterAgent{MaxConcurrentActivities: -1}, `cluster "edge": spec.agent.maxConcurrentActivities -1: must not be negative`},
		{fleet.ClusterAgent{HelmQPS: -0.5}, `cluster "edge": spec.agent.helmQPS -0.5: must be a finite number, not negative`},
		{fleet.ClusterAgent{HelmQPS: math.Inf(1)}, `cluster "edge": spec.agent.helmQPS +Inf: must be a finite number, not negative`},
		{fleet.ClusterAgent{HelmBurst: -3}, `cluster "edge": spec.agent.helmBurst -3: must not be negative`},
		{fleet.ClusterAgent{TemporalAddress: "temporal.example.com"}, `cluster "edge": spec.agent.temporalAddress "temporal.example.com": must be host:port`},
		{fleet.ClusterAgent{Image: "flotilla :1"}, `cluster "edge": spec.agent.image "flotilla :1": must not contain spaces`},
	} {
		err := ValidateCluster(agentCluster("edge", tc.agent))
		if tc.err == "" {
			require.NoError(t, err)
			continue
		}
		require.EqualError(t, err, tc.err)
	}
}

// Moving a cluster to an agent, or changing an agent setting, is a change: the inventory's generation and
// the cluster's digest move, and adding it again without --replace names what would change.
func TestAnAgentSettingChangedIsAVisibleChange(t *testing.T) {
	var inv Inventory
	require.True(t, inv.UpsertCluster(cluster("edge", nil)))
	before := inv.Clusters[0]

	moved := agentCluster("edge", fleet.ClusterAgent{})
	require.EqualError(t, inv.CheckAdd(moved), `cluster "edge" is registered already with other mode (kubeconfig, now agent); `+
		`add --replace to replace its settings (GitRepos that select it by label may then stop or start deploying to it)`)
	require.True(t, inv.UpsertCluster(moved))
	require.NotEqual(t, Digest(before, nil), Digest(inv.Clusters[0], nil))
	require.False(t, inv.UpsertCluster(agentCluster("edge", fleet.ClusterAgent{})), "the same agent again is no change")
	require.NoError(t, inv.CheckAdd(agentCluster("edge", fleet.ClusterAgent{})))

	plain := inv.Clusters[0]
	debug := agentCluster("edge", fleet.ClusterAgent{LogLevel: "debug", HelmBurst: 20})
	require.EqualError(t, inv.CheckAdd(debug), `cluster "edge" is registered already with other agent.logLevel, agent.helmBurst; `+
		`add --replace to replace its settings (GitRepos that select it by label may then stop or start deploying to it)`)
	gen := inv.Generation
	require.True(t, inv.UpsertCluster(debug))
	require.Equal(t, gen+1, inv.Generation)
	require.NotEqual(t, Digest(plain, nil), Digest(inv.Clusters[0], nil))
}

// Entries stay in name order (then workspace) whatever order they are registered in, and an inventory
// carried out of order (written by hand, or by an older release) is put in order by its next insert.
func TestClustersStayInNameOrderWhateverTheOrderTheyAreAddedIn(t *testing.T) {
	names := func(inv Inventory) []string {
		var out []string
		for _, c := range inv.Clusters {
			out = append(out, c.Metadata.Name+"/"+fleet.Workspace(c.Metadata.Namespace))
		}
		return out
	}
	inWorkspace := func(ns, name string) fleet.Cluster {
		return fleet.Cluster{Metadata: fleet.ObjectMeta{Namespace: ns, Name: name}, Spec: fleet.ClusterSpec{KubeConfigPath: "/kube/" + name}}
	}
	var inv Inventory
	rng := rand.New(rand.NewPCG(1, 2))
	var want []string
	for i := 0; i < 300; i++ {
		ns := []string{"", "team-a"}[i%2]
		name := fmt.Sprintf("edge-%03d", rng.IntN(200))
		if inv.UpsertCluster(inWorkspace(ns, name)) {
			want = append(want, name+"/"+fleet.Workspace(ns))
		}
	}
	slices.Sort(want)
	require.Equal(t, want, names(inv))

	legacy := Inventory{Clusters: []fleet.Cluster{inWorkspace("", "c"), inWorkspace("", "a")}}
	require.True(t, legacy.UpsertCluster(inWorkspace("", "b")))
	require.Equal(t, []string{"a/fleet-default", "b/fleet-default", "c/fleet-default"}, names(legacy))
}
