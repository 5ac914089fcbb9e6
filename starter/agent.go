package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/internal/agentmanifest"
	"github.com/flotilla-gitops/flotilla/internal/inventoryquery"
	"github.com/flotilla-gitops/flotilla/internal/parallel"
	"github.com/flotilla-gitops/flotilla/internal/version"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// cliVersion is this build's version (internal/version): the tag of the agent image that `flotilla agent
// manifest` names when the cluster names none; "" for a build that knows no commit, whose agent manifest
// then needs --agent-image.
func cliVersion() string {
	return version.ImageTag()
}

func newAgentCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Pull-mode agents: what runs inside a cluster registered with `cluster add --agent`"}
	cmd.AddCommand(newAgentManifestCmd(g), newAgentKeyCmd(g))
	return cmd
}

// installationKeyFlag is --installation-key-file, the worker's installation key (ADR 26), from which an
// agent's key is derived.
func installationKeyFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "installation-key-file", os.Getenv("FLOTILLA_INSTALLATION_KEY_FILE"),
		"the installation key the workers are given (env FLOTILLA_INSTALLATION_KEY_FILE): the agent gets its cluster's key, derived from it")
}

// clusterKey is the agent key of cluster name in workspace ws, derived from the installation key in file.
func clusterKey(file, ws, name string) (agentkey.Key, error) {
	inst, err := agentkey.Load(file)
	if err != nil {
		return agentkey.Key{}, fmt.Errorf("--installation-key-file: %w", err)
	}
	return inst.ForCluster(ws, name), nil
}

func newAgentKeyCmd(g *globals) *cobra.Command {
	var keyFile string
	cmd := &cobra.Command{
		Use: "key [-n NAMESPACE] NAME --installation-key-file FILE",
		Short: "Print the agent key of an agent-mode cluster, for an agent run by hand (--agent-key-file, FLOTILLA_AGENT_KEY); " +
			"`agent manifest` puts it in the agent's Secret",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyFile == "" {
				return fmt.Errorf("--installation-key-file (or FLOTILLA_INSTALLATION_KEY_FILE) is required: the file the workers are given")
			}
			k, err := clusterKey(keyFile, g.workspace(), args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), k.Encode())
			return err
		},
	}
	installationKeyFlag(cmd, &keyFile)
	return cmd
}

func newInstallationKeyCmd() *cobra.Command {
	return &cobra.Command{
		Use: "installation-key",
		Short: "Print a new installation key: write it to a file given to every worker (--installation-key-file), which binds each agent " +
			"to its own cluster (ADR 26)",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := agentkey.Generate()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), k.Encode())
			return err
		},
	}
}

func newAgentManifestCmd(g *globals) *cobra.Command {
	var apiKeyFile, keyFile string
	cmd := &cobra.Command{
		Use: "manifest [-n NAMESPACE] NAME [--api-key-file FILE] [--installation-key-file FILE]",
		Short: "Print the Kubernetes objects that run the agent of an agent-mode cluster, for `kubectl apply -f -` in that cluster " +
			"(the Temporal address, namespace and task queue are this CLI's unless the cluster names its own)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var apiKey string
			if apiKeyFile != "" {
				b, err := os.ReadFile(apiKeyFile)
				if err != nil {
					return fmt.Errorf("--api-key-file: %w", err)
				}
				if apiKey = strings.TrimSpace(string(b)); apiKey == "" {
					return fmt.Errorf("--api-key-file %s: the file is empty", apiKeyFile)
				}
			}
			secrets := agentmanifest.Secrets{APIKey: apiKey}
			if keyFile != "" {
				k, err := clusterKey(keyFile, g.workspace(), args[0])
				if err != nil {
					return err
				}
				secrets.AgentKey = k.Encode()
			}
			return g.withInventory(func(_ context.Context, _ client.Client, inv inventory.Inventory) error {
				out, err := agentManifest(inv, g.workspace(), args[0], g.installation(), secrets)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(out)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&apiKeyFile, "api-key-file", "", "file holding the Temporal API key the agent dials with (it goes into the agent's Secret only)")
	installationKeyFlag(cmd, &keyFile)
	return cmd
}

// installation is what an agent takes from this CLI's settings when its cluster names nothing else.
func (g *globals) installation() agentmanifest.Installation {
	return agentmanifest.Installation{TemporalAddress: g.address, TemporalNamespace: g.temporalNamespace, TaskQueue: g.taskQueue,
		Version: cliVersion()}
}

// agentManifest is the manifest of the agent of cluster name in workspace ws, as registered in inv.
func agentManifest(inv inventory.Inventory, ws, name string, inst agentmanifest.Installation, secrets agentmanifest.Secrets) ([]byte, error) {
	c, ok := inv.Cluster(ws, name)
	if !ok {
		return nil, fmt.Errorf("cluster %q is not registered", fleet.DisplayName(ws, name))
	}
	if c.Spec.Agent == nil {
		return nil, fmt.Errorf("cluster %q is not in agent mode: the worker reaches it through the kubeconfig %s, and no agent runs in it "+
			"(register it with `flotilla cluster add --replace %s --agent` to move it to an agent)", fleet.DisplayName(ws, name), c.Spec.KubeConfigPath, name)
	}
	return agentmanifest.YAML(c.Metadata.Name, fleet.Workspace(c.Metadata.Namespace), agentmanifest.Effective(*c.Spec.Agent, inst), secrets)
}

// readInventory queries the inventory workflow of this installation.
// withInventory dials, reads the inventory and calls fn with both, within the request timeout.
func (g *globals) withInventory(fn func(ctx context.Context, cl client.Client, inv inventory.Inventory) error) error {
	cl, err := g.dial()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := g.ctx()
	defer cancel()
	inv, err := g.readInventory(ctx, cl)
	if err != nil {
		return err
	}
	return fn(ctx, cl, inv)
}

func (g *globals) readInventory(ctx context.Context, c client.Client) (inventory.Inventory, error) {
	inv, err := inventoryquery.Read(ctx, c, g.taskQueue)
	if err != nil {
		return inv, fmt.Errorf("reading the inventory: %w", err)
	}
	return inv, nil
}

// agentFlags are `cluster add`'s agent settings.
type agentFlags struct {
	enabled           bool
	image             string
	namespace         string
	logLevel          string
	maxConcurrent     int
	helmQPS           float64
	helmBurst         int
	temporalAddress   string
	temporalNamespace string
}

func (a *agentFlags) add(fs *pflag.FlagSet) {
	fs.BoolVar(&a.enabled, "agent", false, "register the cluster in pull mode: an agent in it dials out to Temporal (`flotilla agent manifest` prints it); no kubeconfig")
	fs.StringVar(&a.image, "agent-image", "", "the agent's image (default flotilla:<this CLI's version>)")
	fs.StringVar(&a.namespace, "agent-namespace", "", "namespace the agent runs in (default "+agentmanifest.DefaultNamespace+")")
	fs.StringVar(&a.logLevel, "agent-log-level", "", "the agent's log level: debug, info, warn or error (default "+agentmanifest.DefaultLogLevel+")")
	fs.IntVar(&a.maxConcurrent, "agent-max-concurrent-activities", 0, fmt.Sprintf("activities the agent runs at once (default %d)", agentmanifest.DefaultMaxConcurrentActivities))
	fs.Float64Var(&a.helmQPS, "agent-helm-qps", 0, fmt.Sprintf("the agent's requests per second to its API server (default %d)", agentmanifest.DefaultHelmQPS))
	fs.IntVar(&a.helmBurst, "agent-helm-burst", 0, fmt.Sprintf("the agent's burst of requests to its API server (default %d)", agentmanifest.DefaultHelmBurst))
	fs.StringVar(&a.temporalAddress, "agent-temporal-address", "", "Temporal host:port as the agent reaches it (default: this CLI's --address)")
	fs.StringVar(&a.temporalNamespace, "agent-temporal-namespace", "", "Temporal namespace the agent dials (default: this CLI's --temporal-namespace)")
}

// spec is the agent settings the operator set, nil without --agent. A flag left out stays out of the
// spec, so that it takes its default when the manifest is made instead of pinning today's default in the
// inventory; a flag given is kept even when it equals the default.
func (a *agentFlags) spec(fs *pflag.FlagSet) (*fleet.ClusterAgent, error) {
	var given []string
	fs.Visit(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Name, "agent-") {
			given = append(given, "--"+f.Name)
		}
	})
	if !a.enabled {
		if len(given) > 0 {
			return nil, fmt.Errorf("%s: only with --agent", strings.Join(given, ", "))
		}
		return nil, nil
	}
	// Zero is how the inventory says "not given", so a zero given would silently become the default.
	for _, n := range []struct {
		flag string
		zero bool
		def  string
	}{
		{"agent-max-concurrent-activities", a.maxConcurrent == 0, fmt.Sprint(agentmanifest.DefaultMaxConcurrentActivities)},
		{"agent-helm-qps", a.helmQPS == 0, fmt.Sprint(agentmanifest.DefaultHelmQPS)},
		{"agent-helm-burst", a.helmBurst == 0, fmt.Sprint(agentmanifest.DefaultHelmBurst)},
	} {
		if fs.Changed(n.flag) && n.zero {
			return nil, fmt.Errorf("--%s 0: must be more than 0 (leave it out for the default, %s)", n.flag, n.def)
		}
	}
	var s fleet.ClusterAgent
	set := func(flag string, apply func()) {
		if fs.Changed(flag) {
			apply()
		}
	}
	set("agent-image", func() { s.Image = a.image })
	set("agent-namespace", func() { s.Namespace = a.namespace })
	set("agent-log-level", func() { s.LogLevel = a.logLevel })
	set("agent-max-concurrent-activities", func() { s.MaxConcurrentActivities = a.maxConcurrent })
	set("agent-helm-qps", func() { s.HelmQPS = a.helmQPS })
	set("agent-helm-burst", func() { s.HelmBurst = a.helmBurst })
	set("agent-temporal-address", func() { s.TemporalAddress = a.temporalAddress })
	set("agent-temporal-namespace", func() { s.TemporalNamespace = a.temporalNamespace })
	return &s, nil
}

// taskQueueDescriber is the part of the Temporal client `cluster list` asks about agents.
type taskQueueDescriber interface {
	DescribeTaskQueue(ctx context.Context, taskQueue string, t enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error)
}

// agentSeen is what the pollers of an agent's task queue say of it.
type agentSeen struct {
	// lastSeen is the most recent poll of the agent; zero when no agent polls (or polled lately: Temporal
	// forgets a poller some minutes after its last poll).
	lastSeen time.Time
	version  string
	// err is why its task queue could not be described.
	err error
}

// describeAgents asks Temporal about the agent of each agent-mode cluster, a few at once; kubeconfig
// clusters are not asked about. A failure is kept per cluster: the listing still shows the inventory.
func describeAgents(ctx context.Context, d taskQueueDescriber, taskQueue string, clusters []fleet.Cluster) map[int]agentSeen {
	var agents []int
	for i, c := range clusters {
		if c.Spec.Agent != nil {
			agents = append(agents, i)
		}
	}
	seen := make([]agentSeen, len(agents))
	_ = parallel.ForEach(len(agents), 8, func(j int) error {
		c := clusters[agents[j]]
		seen[j] = describeAgent(ctx, d, api.AgentTaskQueue(taskQueue, c.Metadata.Namespace, c.Metadata.Name))
		return nil
	})
	out := make(map[int]agentSeen, len(agents))
	for j, i := range agents {
		out[i] = seen[j]
	}
	return out
}

// describeAgent reads the most recent poller of an agent's activity task queue: the agent polls only
// activities there (its cluster's workflows run on the management side).
func describeAgent(ctx context.Context, d taskQueueDescriber, queue string) agentSeen {
	resp, err := d.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return agentSeen{err: err}
	}
	var s agentSeen
	for _, p := range resp.GetPollers() {
		at := p.GetLastAccessTime().AsTime()
		if p.GetLastAccessTime() == nil || !at.After(s.lastSeen) {
			continue
		}
		s.lastSeen = at
		s.version = "unknown" // something else polls the queue: say so rather than leave it blank
		if v, _, ok := api.ParseAgentIdentity(p.GetIdentity()); ok {
			s.version = v
		}
	}
	return s
}

// lastSeenText is the LAST SEEN column: an age as kubectl prints one, "never" or "unknown".
func (s agentSeen) lastSeenText(now time.Time) string {
	switch {
	case s.err != nil:
		return "unknown"
	case s.lastSeen.IsZero():
		return "never"
	}
	return duration.HumanDuration(now.Sub(s.lastSeen)) + " ago"
}

func (s agentSeen) versionText() string {
	switch {
	case s.err != nil:
		return "unknown"
	case s.version == "":
		return "-"
	}
	return s.version
}
