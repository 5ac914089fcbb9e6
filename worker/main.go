// Command flotilla-worker runs Flotilla's workflows and activities on its installation's task queue
// (--task-queue, default `flotilla`) and, when asked, serves git push webhooks (--webhook-listen), Prometheus
// metrics (--metrics-listen) and Go's profiles (--pprof-listen). It also starts itself in a hidden mode to render a chart within hard limits before Helm does (internal/chartcheck).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/agentkeeper"
	"github.com/flotilla-gitops/flotilla/internal/agentmanifest"
	"github.com/flotilla-gitops/flotilla/internal/cachedir"
	"github.com/flotilla-gitops/flotilla/internal/chartcheck"
	"github.com/flotilla-gitops/flotilla/internal/charts"
	"github.com/flotilla-gitops/flotilla/internal/content"
	"github.com/flotilla-gitops/flotilla/internal/credentials"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
	"github.com/flotilla-gitops/flotilla/internal/kubeconfigsecret"
	"github.com/flotilla-gitops/flotilla/internal/metrics"
	"github.com/flotilla-gitops/flotilla/internal/searchattr"
	"github.com/flotilla-gitops/flotilla/internal/temporalconn"
	"github.com/flotilla-gitops/flotilla/internal/version"
	"github.com/flotilla-gitops/flotilla/internal/workeropts"
	"github.com/flotilla-gitops/flotilla/internal/zaplog"
	"github.com/flotilla-gitops/flotilla/webhook"
	"github.com/flotilla-gitops/flotilla/workflows"
)

func main() {
	// The worker starts itself in this mode to render a chart within hard limits (internal/chartcheck).
	if len(os.Args) > 1 && os.Args[1] == chartcheck.Command {
		os.Exit(chartcheck.Child(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "flotilla-worker:", err)
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

	// Before anything else: a credentials store that does not load stops the worker at start.
	creds, err := credentials.LoadFlags(cfg.credentials, cfg.gitCredentials)
	if err != nil {
		return err
	}
	if creds != nil {
		log.Info("credentials loaded", zap.String("source", creds.Source()), zap.Strings("secrets", creds.Names()))
	}

	// temporalconn retries for a minute: a worker started beside its Temporal, as in a Compose file or a
	// Pod's rollout, would otherwise exit before the frontend listens.
	tlog := zaplog.NewAdapter(log.Named("temporal"))
	conn := cfg.temporalSettings()
	// Metrics listen before the dial, so a busy address stops the worker at once; the registry is made
	// only when asked for, leaving the activities' metrics nil otherwise.
	reg, stopMetrics, err := metrics.Listen(cfg.metricsListen, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if reg != nil {
		conn.MetricsHandler = reg.SDK
	}
	log.Info("connecting to Temporal", zap.Stringer("temporal", conn))
	c, err := temporalconn.Dial(context.Background(), conn, tlog)
	if err != nil {
		return err
	}
	defer c.Close()

	claim, err := cachedir.TakeLogged(cfg.cacheDir, log)
	if err != nil {
		return err
	}
	defer claim.Release() //nolint:errcheck
	cache := &gitcache.Cache{Dir: cfg.cacheDir, Creds: creds, AllowLocal: cfg.allowLocalRepos}
	// Without Flotilla's search attributes every workflow task fails and nothing says why: check (and
	// create where allowed) before polling, and stop with the commands to run otherwise.
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	created, err := searchattr.Ensure(sctx, searchattr.Service{Client: c.OperatorService()}, cfg.temporalNamespace, api.SearchAttributes)
	cancel()
	if err != nil {
		return err
	}
	if len(created) > 0 {
		log.Info("created search attributes", zap.String("temporalNamespace", cfg.temporalNamespace), zap.Strings("names", created))
	}
	if err := ensureInventory(c, cfg.taskQueue); err != nil {
		return err
	}

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the worker's own binary, which renders charts within limits: %w", err)
	}
	inv := activities.TemporalInventory{Client: c, TaskQueue: cfg.taskQueue}
	var secrets *kubeconfigsecret.Source
	if cfg.managementKubeconfig != "" {
		if secrets, err = kubeconfigsecret.New(cfg.managementKubeconfig); err != nil {
			return fmt.Errorf("--management-kubeconfig: %w", err)
		}
	}

	worker.SetStickyWorkflowCacheSize(cfg.workflowCacheSize) // the process's, for every worker in it
	w := worker.New(c, cfg.taskQueue, workeropts.Sized(cfg.maxActivities, cfg.maxWorkflowTasks))
	w.RegisterWorkflow(workflows.GitRepoWorkflow)
	w.RegisterWorkflow(workflows.ClusterWorkflow)
	w.RegisterWorkflow(workflows.InventoryWorkflow)
	w.RegisterWorkflow(workflows.ContentWorkflow)
	w.RegisterWorkflow(workflows.AgentWorkflow)
	w.RegisterWorkflow(workflows.DiffWorkflow)
	acts := &activities.Activities{
		Git:        cache,
		Clusters:   agentclient.NewPool(log.Named("agentclient")),
		Inventory:  inv,
		Temporal:   c,
		TaskQueue:  cfg.taskQueue,
		Log:        log.Named("activities"),
		ChartCheck: chartcheck.New(self, inv).WithKubeconfigSecrets(secrets),
		// Beside the checkouts, which are pruned per repository; archives are kept by digest.
		Charts:            &charts.Fetcher{Dir: filepath.Join(cfg.cacheDir, "charts"), AllowNetworks: cfg.allowChartNetworks},
		HelmCreds:         creds,
		BundleConcurrency: cfg.bundleConcurrency,
		HelmQPS:           float32(cfg.helmQPS), HelmBurst: cfg.helmBurst,
		// The packages agents fetch (pull mode); any worker can make one again, so losing them costs a render.
		Content: &content.Store{Dir: filepath.Join(cfg.cacheDir, "content")},
		// The agents it keeps dial what this worker dials, unless their registration names their own; the
		// CLI's `agent manifest` defaults to its own settings the same way (ADR 23).
		Installation: agentmanifest.Installation{TemporalAddress: cfg.address, TemporalNamespace: cfg.temporalNamespace,
			TaskQueue: cfg.taskQueue, Version: version.ImageTag()},
		InstallationKey:   cfg.installationKey,
		Workspaces:        cfg.workspaces,
		Targets:           activities.TemporalTargets{Client: c},
		KubeconfigSecrets: secrets,
	}
	if cfg.installationKey.IsZero() {
		log.Warn("no installation key: packages go to agents in the clear and agents cannot tell the management side's tasks " +
			"from anyone else's on the namespace; give every worker --installation-key-file (ADR 26)")
	}
	if reg != nil {
		acts.Metrics = reg.Flotilla
		acts.Charts.Fetched = reg.Flotilla.ChartFetch
	}
	acts.Register(w)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	log.Info("worker starting", zap.String("address", cfg.address), zap.String("temporalNamespace", cfg.temporalNamespace), zap.String("taskQueue", cfg.taskQueue))
	// The webhook comes up first so that a missing secret or a busy address stops the worker before it runs anything.
	if cfg.webhookListen != "" {
		maxBody, err := resource.ParseQuantity(cfg.webhookMaxBody)
		if err != nil || maxBody.Value() <= 0 {
			return fmt.Errorf("--webhook-max-body %q: want a positive size such as 4Mi", cfg.webhookMaxBody)
		}
		hook, err := webhook.Listen(cfg.webhookListen, cfg.webhookSecret, webhook.Limits{MaxBody: maxBody.Value()},
			webhook.Temporal{Client: c, TaskQueue: cfg.taskQueue}, log.Named("webhook"))
		if err != nil {
			return err
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = hook.Shutdown(ctx)
		}()
	}
	if cfg.pprofListen != "" {
		srv, err := servePprof(cfg.pprofListen)
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	reg.MarkPolling()
	keepCtx, stopKeeping := context.WithCancel(context.Background())
	defer stopKeeping()
	go keepAgents(keepCtx, c, inv, cfg.taskQueue, log)
	if reg != nil {
		go reg.CountClusters(keepCtx, c, cfg.taskQueue, log.Named("metrics"))
	}
	<-stop
	log.Info("worker stopping")
	return nil
}

// ensureInventory starts this installation's inventory workflow if it is not running, so the Web UI shows
// it from the start.
func ensureInventory(c client.Client, taskQueue string) error {
	_, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID:                       api.InventoryWorkflowID(taskQueue),
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Flotilla cluster inventory",
	}, workflows.InventoryWorkflow, api.InventoryInput{})
	if err != nil {
		return fmt.Errorf("starting the inventory workflow: %w", err)
	}
	return nil
}

// keepAgents has every agent-mode cluster's AgentWorkflow check now, starting those that do not run: the
// registrations made before this version are kept from its first start, and an agent whose configuration
// changed with the worker (its default image, the worker's Temporal settings) is redeployed once. It runs
// once the worker polls, since reading the inventory is a query this worker answers, and retries for a
// while: a worker starting beside its Temporal may find it slow to answer.
func keepAgents(ctx context.Context, c client.Client, inv activities.TemporalInventory, taskQueue string, log *zap.Logger) {
	delay := time.Second
	for attempt := 1; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		clusters, err := inv.Read(rctx)
		kept := 0
		if err == nil {
			kept, err = agentkeeper.EnsureAll(rctx, c, taskQueue, clusters)
		}
		cancel()
		if err == nil {
			log.Info("agents kept", zap.Int("clusters", kept))
			return
		}
		if attempt == 10 {
			log.Warn("agents not kept; each is on its next `cluster add`", zap.Error(err))
			return
		}
		log.Info("keeping agents; retrying", zap.Int("attempt", attempt), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// servePprof serves profiles for finding where the worker's time goes (the benchmarks use it). Profiles
// show code paths and memory, so only a loopback address is accepted.
func servePprof(addr string) (*http.Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--pprof-listen %q: only a loopback address is allowed", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}
