// Command flotilla-worker runs Flotilla's workflows and activities on the `flotilla` task queue and, when
// asked, serves git push webhooks (--webhook-listen) and Go's profiles (--pprof-listen). It also starts
// itself in a hidden mode to render a chart within hard limits before Helm does (internal/chartcheck).
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
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/chartcheck"
	"github.com/flotilla-gitops/flotilla/internal/envdefault"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
	"github.com/flotilla-gitops/flotilla/internal/searchattr"
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
	defaultCache := filepath.Join(os.TempDir(), "flotilla-git")
	if d, err := os.UserCacheDir(); err == nil {
		defaultCache = filepath.Join(d, "flotilla", "git")
	}
	address := flag.String("address", envdefault.TemporalAddress(), "Temporal frontend host:port (env TEMPORAL_ADDRESS)")
	namespace := flag.String("namespace", envdefault.TemporalNamespace(), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	taskQueue := flag.String("task-queue", api.TaskQueue, "task queue to poll")
	cacheDir := flag.String("cache-dir", envdefault.Or("FLOTILLA_CACHE_DIR", defaultCache), "where git checkouts are cached")
	credsFile := flag.String("git-credentials", os.Getenv("FLOTILLA_GIT_CREDENTIALS"), "YAML file mapping clientSecretName to {username, password}")
	logLevel := flag.String("log-level", "info", "debug, info, warn or error")
	devLog := flag.Bool("dev-log", false, "human-readable logs instead of JSON")
	maxActivities := flag.Int("max-concurrent-activities", workeropts.DefaultMaxConcurrentActivities, "activities run at once by this worker")
	webhookListen := flag.String("webhook-listen", "", "serve git push webhooks on this host:port at "+webhook.Path+" (empty: off)")
	pprofListen := flag.String("pprof-listen", os.Getenv("FLOTILLA_PPROF_LISTEN"), "serve Go's pprof profiles on this loopback host:port at /debug/pprof/ (env FLOTILLA_PPROF_LISTEN; empty: off)")
	webhookSecret := flag.String("webhook-secret-file", os.Getenv("FLOTILLA_WEBHOOK_SECRET_FILE"), "file holding the webhook secret (env FLOTILLA_WEBHOOK_SECRET_FILE); required with --webhook-listen")
	webhookMaxBody := flag.String("webhook-max-body", envdefault.Or("FLOTILLA_WEBHOOK_MAX_BODY", resource.NewQuantity(webhook.DefaultMaxBody, resource.BinarySI).String()),
		"largest webhook payload read, e.g. 4Mi or 1M (env FLOTILLA_WEBHOOK_MAX_BODY); a larger delivery is refused with 413 and waits for the next poll")
	flag.Parse()

	log, err := zaplog.New(*logLevel, *devLog)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck

	c, err := client.Dial(client.Options{HostPort: *address, Namespace: *namespace, Logger: zaplog.NewAdapter(log.Named("temporal"))})
	if err != nil {
		return fmt.Errorf("connecting to Temporal at %s: %w", *address, err)
	}
	defer c.Close()

	cache := &gitcache.Cache{Dir: *cacheDir}
	if *credsFile != "" {
		creds, err := loadCredentials(*credsFile)
		if err != nil {
			return err
		}
		cache.Creds = creds
	}
	// Without Flotilla's search attributes every workflow task fails and nothing says why: check (and
	// create where allowed) before polling, and stop with the commands to run otherwise.
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	created, err := searchattr.Ensure(sctx, searchattr.Service{Client: c.OperatorService()}, *namespace, api.SearchAttributes)
	cancel()
	if err != nil {
		return err
	}
	if len(created) > 0 {
		log.Info("created search attributes", zap.String("namespace", *namespace), zap.Strings("names", created))
	}
	if err := ensureInventory(c); err != nil {
		return err
	}

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the worker's own binary, which renders charts within limits: %w", err)
	}
	inv := activities.TemporalInventory{Client: c}

	w := worker.New(c, *taskQueue, workeropts.Options(*maxActivities))
	w.RegisterWorkflow(workflows.GitRepoWorkflow)
	w.RegisterWorkflow(workflows.ClusterWorkflow)
	w.RegisterWorkflow(workflows.InventoryWorkflow)
	acts := &activities.Activities{
		Git:        cache,
		Clusters:   agentclient.NewPool(log.Named("agentclient")),
		Inventory:  inv,
		Temporal:   c,
		Log:        log.Named("activities"),
		ChartCheck: chartcheck.New(self, inv),
	}
	acts.Register(w)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	log.Info("worker starting", zap.String("address", *address), zap.String("namespace", *namespace), zap.String("taskQueue", *taskQueue))
	// The webhook comes up first so that a missing secret or a busy address stops the worker before it runs anything.
	if *webhookListen != "" {
		maxBody, err := resource.ParseQuantity(*webhookMaxBody)
		if err != nil || maxBody.Value() <= 0 {
			return fmt.Errorf("--webhook-max-body %q: want a positive size such as 4Mi", *webhookMaxBody)
		}
		hook, err := webhook.Listen(*webhookListen, *webhookSecret, webhook.Limits{MaxBody: maxBody.Value()}, webhook.Temporal{Client: c}, log.Named("webhook"))
		if err != nil {
			return err
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = hook.Shutdown(ctx)
		}()
	}
	if *pprofListen != "" {
		srv, err := servePprof(*pprofListen)
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	<-stop
	log.Info("worker stopping")
	return nil
}

// ensureInventory starts the inventory workflow if it is not running, so the Web UI shows it from the start.
func ensureInventory(c client.Client) error {
	_, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID:                       api.InventoryWorkflowID,
		TaskQueue:                api.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Flotilla cluster inventory",
	}, workflows.InventoryWorkflow, workflows.InventoryInput{})
	if err != nil {
		return fmt.Errorf("starting the inventory workflow: %w", err)
	}
	return nil
}

func loadCredentials(path string) (gitcache.BasicAuth, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var creds gitcache.BasicAuth
	if err := yaml.Unmarshal(data, &creds); err != nil {
		// The file's content is never echoed: it holds secrets.
		return nil, fmt.Errorf("%s: not a YAML map of name: {username, password}", path)
	}
	return creds, nil
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
