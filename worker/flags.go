package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/internal/charts"
	"github.com/flotilla-gitops/flotilla/internal/envdefault"
	"github.com/flotilla-gitops/flotilla/internal/kubeconfigsecret"
	"github.com/flotilla-gitops/flotilla/internal/temporalconn"
	"github.com/flotilla-gitops/flotilla/internal/workeropts"
	"github.com/flotilla-gitops/flotilla/webhook"
)

// config is the worker's command line, each flag defaulting to its environment variable where it has one.
type config struct {
	address, taskQueue string
	// temporalNamespace is --temporal-namespace: in the CLI, -n/--namespace is a GitRepo's workspace.
	temporalNamespace            string
	cacheDir                     string
	credentials, gitCredentials  string
	logLevel                     string
	devLog                       bool
	maxActivities                int
	maxWorkflowTasks             int
	workflowCacheSize            int
	bundleConcurrency            int
	helmQPS                      float64
	helmBurst                    int
	webhookListen, webhookSecret string
	webhookMaxBody               string
	pprofListen                  string
	metricsListen                string
	allowLocalRepos              bool
	allowChartNetworks           []netip.Prefix
	installationKey              agentkey.Key
	workspaces                   activities.WorkspacePolicy
	managementKubeconfig         string
	// temporal is how to reach Temporal securely (--tls*, --api-key-file); see temporalSettings.
	temporal temporalconn.Settings
}

// temporalSettings is the connection to dial: the TLS and API key flags with --address and
// --temporal-namespace, which the worker had before they moved to internal/temporalconn.
func (c config) temporalSettings() temporalconn.Settings {
	s := c.temporal
	s.Address, s.Namespace = c.address, c.temporalNamespace
	return s
}

// parseFlags reads the worker's flags from args into a config; main passes flag.CommandLine, which exits
// on a malformed flag, tests a set of their own.
func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	defaultCache := filepath.Join(os.TempDir(), "flotilla-git")
	if d, err := os.UserCacheDir(); err == nil {
		defaultCache = filepath.Join(d, "flotilla", "git")
	}
	var c config
	fs.StringVar(&c.address, "address", envdefault.TemporalAddress(), "Temporal frontend host:port (env TEMPORAL_ADDRESS)")
	// --temporal-namespace, as in the CLI, where -n/--namespace is a GitRepo's workspace; the worker serves
	// every workspace.
	fs.StringVar(&c.temporalNamespace, "temporal-namespace", envdefault.TemporalNamespace(), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	fs.StringVar(&c.taskQueue, "task-queue", envdefault.TaskQueue(),
		"task queue to poll, which sets this installation apart from others on the namespace (env FLOTILLA_TASK_QUEUE); the CLI takes the same")
	fs.StringVar(&c.cacheDir, "cache-dir", envdefault.Or("FLOTILLA_CACHE_DIR", defaultCache), "where git checkouts and charts are cached (env FLOTILLA_CACHE_DIR)")
	fs.StringVar(&c.credentials, "credentials", os.Getenv("FLOTILLA_CREDENTIALS"),
		"credentials that GitRepos name (clientSecretName): a YAML file mapping each name to its keys, or a folder <dir>/<name>/<key> as Kubernetes Secrets are mounted (env FLOTILLA_CREDENTIALS); read once, at start")
	fs.StringVar(&c.gitCredentials, "git-credentials", os.Getenv("FLOTILLA_GIT_CREDENTIALS"), "older name of --credentials FILE (env FLOTILLA_GIT_CREDENTIALS)")
	fs.StringVar(&c.logLevel, "log-level", envdefault.Or("FLOTILLA_LOG_LEVEL", "info"), "debug, info, warn or error (env FLOTILLA_LOG_LEVEL)")
	fs.BoolVar(&c.devLog, "dev-log", false, "human-readable logs instead of JSON")
	fs.IntVar(&c.maxActivities, "max-concurrent-activities", envdefault.Int("FLOTILLA_MAX_CONCURRENT_ACTIVITIES", workeropts.DefaultMaxConcurrentActivities),
		"activities run at once by this worker (env FLOTILLA_MAX_CONCURRENT_ACTIVITIES)")
	fs.IntVar(&c.maxWorkflowTasks, "max-concurrent-workflow-tasks", envdefault.Int("FLOTILLA_MAX_CONCURRENT_WORKFLOW_TASKS", workeropts.DefaultMaxConcurrentWorkflowTasks),
		"workflow tasks run at once by this worker (env FLOTILLA_MAX_CONCURRENT_WORKFLOW_TASKS)")
	fs.IntVar(&c.workflowCacheSize, "workflow-cache-size", envdefault.Int("FLOTILLA_WORKFLOW_CACHE_SIZE", workeropts.DefaultWorkflowCacheSize),
		"workflows kept in memory between their tasks, about one per cluster of each GitRepo; one pushed out is replayed from its history on its next task (env FLOTILLA_WORKFLOW_CACHE_SIZE)")
	fs.IntVar(&c.bundleConcurrency, "bundle-concurrency", envdefault.Int("FLOTILLA_BUNDLE_CONCURRENCY", activities.DefaultBundleConcurrency),
		"bundles one activity renders, observes or applies at once on one cluster (env FLOTILLA_BUNDLE_CONCURRENCY)")
	fs.Float64Var(&c.helmQPS, "helm-qps", envdefault.Float("FLOTILLA_HELM_QPS", float64(agentclient.DefaultQPS)),
		"requests per second to each cluster's API server (env FLOTILLA_HELM_QPS)")
	fs.IntVar(&c.helmBurst, "helm-burst", envdefault.Int("FLOTILLA_HELM_BURST", agentclient.DefaultBurst), "burst of requests to each cluster's API server (env FLOTILLA_HELM_BURST)")
	fs.StringVar(&c.webhookListen, "webhook-listen", os.Getenv("FLOTILLA_WEBHOOK_LISTEN"),
		"serve git push webhooks on this host:port at "+webhook.Path+" (env FLOTILLA_WEBHOOK_LISTEN; empty: off)")
	fs.StringVar(&c.pprofListen, "pprof-listen", os.Getenv("FLOTILLA_PPROF_LISTEN"), "serve Go's pprof profiles on this loopback host:port at /debug/pprof/ (env FLOTILLA_PPROF_LISTEN; empty: off)")
	fs.StringVar(&c.metricsListen, "metrics-listen", os.Getenv("FLOTILLA_METRICS_LISTEN"),
		"serve Prometheus metrics on this host:port at /metrics (env FLOTILLA_METRICS_LISTEN; empty: off)")
	fs.StringVar(&c.webhookSecret, "webhook-secret-file", os.Getenv("FLOTILLA_WEBHOOK_SECRET_FILE"), "file holding the webhook secret (env FLOTILLA_WEBHOOK_SECRET_FILE); required with --webhook-listen")
	fs.StringVar(&c.webhookMaxBody, "webhook-max-body", envdefault.Or("FLOTILLA_WEBHOOK_MAX_BODY", resource.NewQuantity(webhook.DefaultMaxBody, resource.BinarySI).String()),
		"largest webhook payload read, e.g. 4Mi or 1M (env FLOTILLA_WEBHOOK_MAX_BODY); a larger delivery is refused with 413 and waits for the next poll")
	fs.BoolVar(&c.allowLocalRepos, "allow-local-repos", envdefault.Bool("FLOTILLA_ALLOW_LOCAL_REPOS"),
		"let GitRepos name repositories on this machine's disk (file://, a path) (env FLOTILLA_ALLOW_LOCAL_REPOS=1); off, "+
			"since any workspace could then name another's checkout or any folder the worker reads: only where one trusted party writes every GitRepo")
	installationKeyFile := fs.String("installation-key-file", os.Getenv("FLOTILLA_INSTALLATION_KEY_FILE"),
		"file holding the installation key (`flotilla installation-key` makes one), the same on every worker (env FLOTILLA_INSTALLATION_KEY_FILE): "+
			"packages are sealed to each agent cluster's key derived from it and what agents act on is granted with it (ADR 26); empty: agents are not bound")
	workspaces := fs.String("workspaces", os.Getenv("FLOTILLA_WORKSPACES"),
		"the only workspaces this installation serves, comma-separated (env FLOTILLA_WORKSPACES); GitRepos and clusters of others are refused. "+
			"With a Temporal namespace per trust zone, what makes a workspace a boundary (ADR 27); empty: every workspace")
	fs.StringVar(&c.workspaces.KubeconfigDir, "kubeconfig-dir", os.Getenv("FLOTILLA_KUBECONFIG_DIR"),
		"where kubeconfigs are: a cluster of workspace W may name only a kubeconfig under DIR/W (env FLOTILLA_KUBECONFIG_DIR); empty: anywhere")
	fs.StringVar(&c.managementKubeconfig, "management-kubeconfig", os.Getenv("FLOTILLA_MANAGEMENT_KUBECONFIG"),
		"kubeconfig of the management cluster, or "+kubeconfigsecret.InCluster+" when the worker runs in it (env FLOTILLA_MANAGEMENT_KUBECONFIG): "+
			"where the kubeconfig Secrets of clusters registered with spec.kubeConfigSecret are read (ADR 38); empty: such clusters are unreachable")
	chartNetworks := fs.String("allow-chart-networks", os.Getenv("FLOTILLA_ALLOW_CHART_NETWORKS"),
		"loopback, private and link-local networks (CIDR, comma-separated) where chart repositories and registries may be, "+
			"e.g. 10.0.0.0/8 (env FLOTILLA_ALLOW_CHART_NETWORKS); public addresses are always reached, others never unless listed")
	c.temporal.AddFlags(fs)
	if err := envdefault.CheckNumbers(workerNumericEnv, []string{"FLOTILLA_HELM_QPS"}); err != nil {
		return config{}, err
	}
	if err := envdefault.CheckBools("FLOTILLA_ALLOW_LOCAL_REPOS"); err != nil {
		return config{}, err
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	for _, n := range []struct {
		flag  string
		value float64
	}{{"max-concurrent-activities", float64(c.maxActivities)}, {"max-concurrent-workflow-tasks", float64(c.maxWorkflowTasks)},
		{"workflow-cache-size", float64(c.workflowCacheSize)},
		{"bundle-concurrency", float64(c.bundleConcurrency)}, {"helm-qps", c.helmQPS}, {"helm-burst", float64(c.helmBurst)}} {
		if n.value <= 0 {
			return config{}, fmt.Errorf("--%s %v: must be positive", n.flag, n.value)
		}
	}
	for _, w := range strings.Split(*workspaces, ",") {
		if w = strings.TrimSpace(w); w != "" {
			c.workspaces.Workspaces = append(c.workspaces.Workspaces, w)
		}
	}
	var err error
	if *installationKeyFile != "" {
		if c.installationKey, err = agentkey.Load(*installationKeyFile); err != nil {
			return config{}, fmt.Errorf("--installation-key-file (or FLOTILLA_INSTALLATION_KEY_FILE): %w", err)
		}
	}
	if c.allowChartNetworks, err = charts.ParseNetworks(*chartNetworks); err != nil {
		return config{}, fmt.Errorf("--allow-chart-networks (or FLOTILLA_ALLOW_CHART_NETWORKS): %w", err)
	}
	if err := api.CheckTaskQueue(c.taskQueue); err != nil {
		return config{}, fmt.Errorf("--task-queue (or FLOTILLA_TASK_QUEUE): %w", err)
	}
	return c, nil
}

// workerNumericEnv are the whole-number settings read from the environment, refused at start when malformed.
var workerNumericEnv = []string{"FLOTILLA_MAX_CONCURRENT_ACTIVITIES", "FLOTILLA_MAX_CONCURRENT_WORKFLOW_TASKS",
	"FLOTILLA_BUNDLE_CONCURRENCY", "FLOTILLA_HELM_BURST"}
