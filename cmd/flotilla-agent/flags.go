package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/internal/agentmanifest"
	"github.com/flotilla-gitops/flotilla/internal/envdefault"
	"github.com/flotilla-gitops/flotilla/internal/temporalconn"
)

// config is the agent's command line; every flag defaults to its environment variable, which is how the
// Deployment `flotilla agent manifest` prints configures it.
type config struct {
	metricsListen           string
	cluster, workspace      string
	kubeconfig, kubeContext string
	address                 string
	temporalNamespace       string
	taskQueue               string
	cacheDir                string
	logLevel                string
	devLog                  bool
	maxActivities           int
	bundleConcurrency       int
	helmQPS                 float64
	helmBurst               int
	// conn is how the agent reaches Temporal securely (TLS, mTLS, API key), as the worker does.
	conn temporalconn.Settings
	// key is the cluster's agent key (ADR 26), from --agent-key-file or FLOTILLA_AGENT_KEY; zero: none.
	key agentkey.Key
}

// Defaults of the agent's concurrency, the same as the Deployment `flotilla agent manifest` prints: an agent
// serves one cluster, so it needs far fewer slots than a worker serving thousands.
const (
	DefaultMaxConcurrentActivities = agentmanifest.DefaultMaxConcurrentActivities
	DefaultBundleConcurrency       = activities.DefaultBundleConcurrency
	DefaultHelmQPS                 = agentmanifest.DefaultHelmQPS
	DefaultHelmBurst               = agentmanifest.DefaultHelmBurst
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	defaultCache := filepath.Join(os.TempDir(), "flotilla-agent")
	if d, err := os.UserCacheDir(); err == nil {
		defaultCache = filepath.Join(d, "flotilla", "agent")
	}
	if err := envdefault.CheckNumbers(numericEnv, []string{"FLOTILLA_HELM_QPS"}); err != nil {
		return config{}, err
	}
	var c config
	fs.StringVar(&c.cluster, "cluster", os.Getenv("FLOTILLA_CLUSTER"), "this cluster's name in the inventory (env FLOTILLA_CLUSTER); required")
	fs.StringVar(&c.workspace, "workspace", os.Getenv("FLOTILLA_WORKSPACE"), "this cluster's workspace, empty for fleet-default (env FLOTILLA_WORKSPACE)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of this cluster (env KUBECONFIG); empty: the pod's service account (in-cluster)")
	fs.StringVar(&c.kubeContext, "context", "", "context in --kubeconfig; empty: its current context")
	fs.StringVar(&c.address, "address", envdefault.TemporalAddress(), "Temporal frontend host:port to dial out to (env TEMPORAL_ADDRESS)")
	fs.StringVar(&c.temporalNamespace, "namespace", envdefault.TemporalNamespace(), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	fs.StringVar(&c.temporalNamespace, "temporal-namespace", envdefault.TemporalNamespace(), "the same as --namespace, spelled as the worker spells it")
	fs.StringVar(&c.taskQueue, "task-queue", envdefault.TaskQueue(), "the installation's task queue (env FLOTILLA_TASK_QUEUE); the agent polls its own queue derived from it")
	fs.StringVar(&c.cacheDir, "cache-dir", envdefault.Or("FLOTILLA_CACHE_DIR", defaultCache), "where fetched packages are kept (env FLOTILLA_CACHE_DIR)")
	fs.StringVar(&c.metricsListen, "metrics-listen", os.Getenv("FLOTILLA_METRICS_LISTEN"),
		"serve Prometheus metrics on this host:port at /metrics (env FLOTILLA_METRICS_LISTEN; empty: off)")
	fs.StringVar(&c.logLevel, "log-level", envdefault.Or("FLOTILLA_LOG_LEVEL", "info"), "debug, info, warn or error (env FLOTILLA_LOG_LEVEL)")
	fs.BoolVar(&c.devLog, "dev-log", false, "human-readable logs instead of JSON")
	fs.IntVar(&c.maxActivities, "max-concurrent-activities", envdefault.Int("FLOTILLA_MAX_CONCURRENT_ACTIVITIES", DefaultMaxConcurrentActivities),
		"activities the agent runs at once (env FLOTILLA_MAX_CONCURRENT_ACTIVITIES)")
	fs.IntVar(&c.bundleConcurrency, "bundle-concurrency", envdefault.Int("FLOTILLA_BUNDLE_CONCURRENCY", DefaultBundleConcurrency),
		"bundles one activity observes or applies at once (env FLOTILLA_BUNDLE_CONCURRENCY)")
	fs.Float64Var(&c.helmQPS, "helm-qps", envdefault.Float("FLOTILLA_HELM_QPS", DefaultHelmQPS), "requests per second to the API server (env FLOTILLA_HELM_QPS)")
	fs.IntVar(&c.helmBurst, "helm-burst", envdefault.Int("FLOTILLA_HELM_BURST", DefaultHelmBurst), "burst of requests to the API server (env FLOTILLA_HELM_BURST)")
	keyFile := fs.String("agent-key-file", os.Getenv("FLOTILLA_AGENT_KEY_FILE"), "file holding this cluster's agent key, which `flotilla agent manifest` "+
		"puts in the agent's Secret as FLOTILLA_AGENT_KEY (env FLOTILLA_AGENT_KEY_FILE); with a key, the agent opens only packages sealed to its "+
		"cluster and acts only on what the management side granted")
	c.conn.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	var err error
	switch {
	case *keyFile != "":
		c.key, err = agentkey.Load(*keyFile)
	case os.Getenv("FLOTILLA_AGENT_KEY") != "":
		c.key, err = agentkey.Parse(os.Getenv("FLOTILLA_AGENT_KEY"), "FLOTILLA_AGENT_KEY")
	}
	if err != nil {
		return config{}, err
	}
	switch {
	case c.cluster == "":
		return config{}, fmt.Errorf("--cluster (or FLOTILLA_CLUSTER) is required: the name this cluster was registered with (flotilla cluster add NAME --agent)")
	case !dnsLabel.MatchString(c.cluster):
		return config{}, fmt.Errorf("--cluster %q: must be a DNS label", c.cluster)
	case c.workspace != "" && !dnsLabel.MatchString(c.workspace):
		return config{}, fmt.Errorf("--workspace %q: must be a DNS label", c.workspace)
	case c.maxActivities < 1:
		return config{}, fmt.Errorf("--max-concurrent-activities %d: must be at least 1", c.maxActivities)
	case c.bundleConcurrency < 1:
		return config{}, fmt.Errorf("--bundle-concurrency %d: must be at least 1", c.bundleConcurrency)
	case c.helmQPS <= 0 || c.helmBurst < 1:
		return config{}, fmt.Errorf("--helm-qps %v and --helm-burst %d: must be positive", c.helmQPS, c.helmBurst)
	}
	if err := api.CheckTaskQueue(c.taskQueue); err != nil {
		return config{}, fmt.Errorf("--task-queue (or FLOTILLA_TASK_QUEUE): %w", err)
	}
	return c, nil
}

// numericEnv are the whole-number settings read from the environment, refused at start when malformed.
var numericEnv = []string{"FLOTILLA_MAX_CONCURRENT_ACTIVITIES", "FLOTILLA_BUNDLE_CONCURRENCY", "FLOTILLA_HELM_BURST"}
