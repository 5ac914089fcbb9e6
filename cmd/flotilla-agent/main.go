// Command flotilla-agent runs in (or next to) one downstream cluster in pull mode (ADR 22): it dials out
// to Temporal only, polls its cluster's own task queue, and runs there the activities that touch the
// cluster (observe, apply, check, uninstall) with the cluster's credentials, which never leave it. What
// it applies was rendered on the management side and reaches it through Temporal, by digest, in chunks.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/cachedir"
	"github.com/flotilla-gitops/flotilla/internal/chartcheck"
	"github.com/flotilla-gitops/flotilla/internal/content"
	"github.com/flotilla-gitops/flotilla/internal/metrics"
	"github.com/flotilla-gitops/flotilla/internal/temporalconn"
	"github.com/flotilla-gitops/flotilla/internal/version"
	"github.com/flotilla-gitops/flotilla/internal/zaplog"
)

func main() {
	// The agent starts itself in this mode to render a chart within hard limits (internal/chartcheck).
	if len(os.Args) > 1 && os.Args[1] == chartcheck.Command {
		os.Exit(chartcheck.Child(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "flotilla-agent:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		return err
	}
	log, err := zaplog.New(cfg.logLevel, cfg.devLog)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck

	claim, err := cachedir.TakeLogged(cfg.cacheDir, log)
	if err != nil {
		return err
	}
	defer claim.Release() //nolint:errcheck
	kubeconfig := cfg.kubeconfig
	if kubeconfig == "" {
		if kubeconfig, err = inClusterKubeconfig(cfg.cacheDir); err != nil {
			return err
		}
	}
	pool := agentclient.NewPool(log.Named("agentclient"))
	cl, err := pool.Get(agentclient.Config{KubeconfigPath: kubeconfig, Context: cfg.kubeContext, QPS: float32(cfg.helmQPS), Burst: cfg.helmBurst})
	if err != nil {
		return fmt.Errorf("cluster %q: %w", cfg.cluster, err)
	}

	host, _ := os.Hostname()
	identity := api.AgentIdentity(version.String(), cfg.cluster, host)
	conn := cfg.conn
	conn.Address, conn.Namespace, conn.Identity = cfg.address, cfg.temporalNamespace, identity
	// As in the worker, minus flotilla_clusters: counting is the management side's, which sees every cluster.
	reg, stopMetrics, err := metrics.Listen(cfg.metricsListen, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if reg != nil {
		conn.MetricsHandler = reg.SDK
	}
	log.Info("connecting to Temporal", zap.Stringer("connection", conn))
	// Dial retries an unreachable server with backoff, then says which setting to fix.
	c, err := temporalconn.Dial(context.Background(), conn, zaplog.NewAdapter(log.Named("temporal")))
	if err != nil {
		return err
	}
	defer c.Close()

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the agent's own binary, which renders charts within limits: %w", err)
	}
	queue := api.AgentTaskQueue(cfg.taskQueue, cfg.workspace, cfg.cluster)
	acts := &activities.Activities{
		Clusters:          pool,
		Inventory:         activities.TemporalInventory{Client: c, TaskQueue: cfg.taskQueue},
		Log:               log.Named("activities"),
		BundleConcurrency: cfg.bundleConcurrency,
		ChartCheck:        chartcheck.NewLocal(self, kubeconfig, cfg.kubeContext),
		Local: &activities.LocalCluster{
			Name: cfg.cluster, Workspace: cfg.workspace, Client: cl,
			Store: &content.Store{Dir: filepath.Join(cfg.cacheDir, "content")},
			Fetch: fetcher(c, cfg.taskQueue),
			Key:   cfg.key,
		},
	}
	if reg != nil {
		acts.Metrics = reg.Flotilla
	}
	w := worker.New(c, queue, worker.Options{
		MaxConcurrentActivityExecutionSize: cfg.maxActivities,
		Identity:                           identity,
		// The agent runs no workflow code: the management side decides, the agent only acts.
		DisableWorkflowWorker: true,
	})
	acts.RegisterAgent(w)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	if cfg.key.IsZero() {
		log.Warn("agent without a key: it trusts every task of its queue and reads packages in the clear; give it the key " +
			"`flotilla agent manifest` puts in its Secret (FLOTILLA_AGENT_KEY)")
	}
	log.Info("agent starting", zap.Bool("keyed", !cfg.key.IsZero()), zap.String("cluster", cfg.cluster), zap.String("address", cfg.address), zap.String("temporalNamespace", cfg.temporalNamespace),
		zap.String("taskQueue", queue), zap.String("version", version.String()))
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	reg.MarkPolling()
	<-stop
	log.Info("agent stopping")
	return nil
}

// fetcher reads chunks of packages through a short ContentWorkflow on the installation's task queue. Its
// ID names what it fetches, so agents that want the same chunks at once share one run.
func fetcher(c client.Client, taskQueue string) func(ctx context.Context, in api.ReadContentInput) ([]byte, error) {
	return func(ctx context.Context, in api.ReadContentInput) ([]byte, error) {
		h := sha256.New()
		for _, ch := range in.Chunks {
			fmt.Fprintf(h, "%s %d %d\n", ch.Digest, ch.Offset, ch.Length)
		}
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID:                       "flotilla-content/" + taskQueue + "/" + hex.EncodeToString(h.Sum(nil))[:32],
			TaskQueue:                taskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			WorkflowExecutionTimeout: 5 * time.Minute,
			StaticSummary:            fmt.Sprintf("%d chunk(s) of packages for %s", len(in.Chunks), in.Target.Cluster),
		}, api.ContentWorkflowType, in)
		if err != nil {
			return nil, err
		}
		var data []byte
		err = run.Get(ctx, &data)
		return data, err
	}
}
