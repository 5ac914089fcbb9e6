package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/inventory"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/env/tempdev"
)

// env is what every experiment shares: one etcd and a pool of real kube-apiservers (apiserver-only
// clusters, as in Fleet's benchmark setup). Temporal and the worker are started fresh per experiment.
type env struct {
	cfg        Config
	dir        string
	k8s        *localk8s.Env
	apiservers []string
	scrapers   []*apiServerScraper
	logf       func(format string, args ...any)
	// results are the rows of every experiment of the run that succeeded so far, by experiment: a row
	// measured against another experiment's (deploy-50x50-2workers) takes it from here.
	results map[string][]Result
	// floors are the orchestration-floor rows measured so far, by cluster count: every deployment row
	// carries the floor at its own size, and the floor experiment reports the same measurement.
	floors map[int]Result
}

func startEnv(ctx context.Context, cfg Config, logf func(string, ...any)) (*env, error) {
	e := &env{cfg: cfg, dir: cfg.WorkDir, logf: logf, results: map[string][]Result{}, floors: map[int]Result{}}
	var specs []localk8s.ClusterOptions
	for i := 0; i < cfg.APIServers; i++ {
		name := fmt.Sprintf("api-%d", i)
		e.apiservers = append(e.apiservers, name)
		specs = append(specs, localk8s.ClusterOptions{Name: name})
	}
	start := time.Now()
	k8s, err := localk8s.Start(ctx, localk8s.Options{Dir: filepath.Join(e.dir, "clusters"), BinDir: cfg.BinDir, Clusters: specs})
	if err != nil {
		return nil, err
	}
	e.k8s = k8s
	for _, name := range e.apiservers {
		s, err := newAPIServerScraper(k8s.Kubeconfig(name))
		if err != nil {
			_ = k8s.Stop()
			return nil, err
		}
		e.scrapers = append(e.scrapers, s)
	}
	logf("%d kube-apiservers (one etcd) ready in %s", len(e.apiservers), time.Since(start).Round(100*time.Millisecond))
	return e, nil
}

func (e *env) stop() {
	if e.k8s != nil {
		_ = e.k8s.Stop()
	}
}

// apiServerPIDs are the kube-apiservers' and etcd's process IDs, read from the pid files localk8s writes.
func (e *env) apiServerPIDs() (apiservers []int, etcd int) {
	read := func(name string) int {
		data, err := os.ReadFile(filepath.Join(e.k8s.PIDDir(), name+".pid"))
		if err != nil {
			return 0
		}
		pid, _ := strconv.Atoi(strings.SplitN(string(data), "\n", 2)[0])
		return pid
	}
	for _, name := range e.apiservers {
		apiservers = append(apiservers, read(name+"-apiserver"))
	}
	return apiservers, read("etcd")
}

// apiRequests sums client requests over every API server.
func (e *env) apiRequests(ctx context.Context) (float64, error) {
	var sum float64
	for _, s := range e.scrapers {
		n, err := s.requests(ctx)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// benchCluster is one Flotilla cluster of an experiment: a real API server of its own, or a simulated
// cluster confined to one namespace of a shared API server.
type benchCluster struct {
	Name       string
	APIServer  int
	Kubeconfig string
	// Namespace confines a simulated cluster (spec.confineToNamespace); empty for a real cluster.
	Namespace string
	// Agent registers the cluster in pull mode: the inventory holds no kubeconfig, and a flotilla-agent
	// of its own, given Kubeconfig, runs its cluster-side activities.
	Agent bool
}

// layout places n clusters named <tag>-NNNN. Up to one per real API server they are real; beyond that
// every cluster is simulated, spread round-robin over the API servers, each with a kubeconfig file of
// its own (so, like a real cluster, it gets its own client, rate limiter and discovery cache in the
// worker) and confined to namespace <nsPrefix>-<name>.
func (e *env) layout(tag string, n int, simulate bool) ([]benchCluster, error) {
	real := !simulate && n <= len(e.apiservers)
	dir := filepath.Join(e.dir, "kubeconfigs", tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := make([]benchCluster, n)
	for i := range out {
		c := benchCluster{Name: fmt.Sprintf("%s-%04d", tag, i), APIServer: i % len(e.apiservers)}
		backing := e.k8s.Kubeconfig(e.apiservers[c.APIServer])
		if real {
			c.Kubeconfig = backing
		} else {
			c.Namespace = c.Name
			c.Kubeconfig = filepath.Join(dir, c.Name+".yaml")
			if err := writeKubeconfigAs(backing, c.Kubeconfig, c.Name); err != nil {
				return nil, err
			}
		}
		out[i] = c
	}
	return out, nil
}

// writeKubeconfigAs copies a kubeconfig, renaming its context, cluster and user entries to name.
func writeKubeconfigAs(src, dst, name string) error {
	cfg, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return err
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return fmt.Errorf("%s: no current context", src)
	}
	c := ctx.DeepCopy()
	c.Cluster, c.AuthInfo = name, name
	out := clientcmdapi.NewConfig()
	out.Contexts[name] = c
	out.Clusters[name] = cfg.Clusters[ctx.Cluster].DeepCopy()
	out.AuthInfos[name] = cfg.AuthInfos[ctx.AuthInfo].DeepCopy()
	out.CurrentContext = name
	return clientcmd.WriteToFile(*out, dst)
}

// run is one experiment's Temporal dev server and worker.
type run struct {
	e        *env
	name     string
	dir      string
	temporal *tempdev.Server
	// workers are the flotilla-worker processes of the current generation, all on one task queue; a run
	// has one unless its experiment asks for more (deploy-50x50-2workers).
	workers []*proc.Process
	// workerCount is how many workers every start starts.
	workerCount int
	client      client.Client
	// queries counts the status queries this benchmark sent, which Temporal also counts as actions.
	queries atomic.Int64
	// workerCPUBefore is the CPU time of worker processes that were killed, so totals survive a restart.
	workerCPUBefore float64
	// workerArgs are added to the worker's command line, at every start.
	workerArgs []string
	// agents are the flotilla-agent processes of the run's agent-mode clusters, one each.
	agents []*proc.Process
	// keyFile and key are the run's installation key (ADR 26): agents are bound as an installation's are.
	keyFile string
	key     agentkey.Key
	// clusters are the run's clusters, as registered in its inventory.
	clusters []benchCluster
}

// startRun starts Temporal with the clusters already in the inventory, then the workers (at least one),
// and waits until every worker polls. Starting the inventory with its content is what continue-as-new
// does; it spares the benchmark a thousand updates that are not what it measures.
func (e *env) startRun(ctx context.Context, name string, clusters []benchCluster, labels map[string]string, workerArgs []string, workers int) (*run, error) {
	r := &run{e: e, name: name, dir: filepath.Join(e.dir, "runs", name), workerArgs: workerArgs, clusters: clusters, workerCount: max(workers, 1)}
	tmp, err := tempdev.Start(ctx, tempdev.Options{Bin: filepath.Join(e.cfg.BinDir, "temporal"), Dir: filepath.Join(r.dir, "temporal"),
		Headless: true, SearchAttributes: api.SearchAttributes, LogFile: filepath.Join(r.dir, "temporal.log"),
		DynamicConfig: e.cfg.TemporalDynamicConfig})
	if err != nil {
		return nil, err
	}
	r.temporal = tmp
	c, err := client.Dial(client.Options{HostPort: tmp.Address(), Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		r.stop()
		return nil, err
	}
	r.client = c
	inv := inventory.Inventory{}
	for _, bc := range clusters {
		spec := fleet.ClusterSpec{KubeConfigPath: bc.Kubeconfig, ConfineToNamespace: bc.Namespace}
		if bc.Agent {
			spec.KubeConfigPath, spec.Agent = "", &fleet.ClusterAgent{}
		}
		inv.UpsertCluster(fleet.Cluster{Metadata: fleet.ObjectMeta{Name: bc.Name, Labels: labels}, Spec: spec})
	}
	// Plain, as a base build in a comparison reads it, unless it is over half of Temporal's payload limit
	// (fanout-10000): then packed, as the inventory continues as new.
	in, err := api.NewInventoryInput(inv, temporalPayloadLimitBytes/2)
	if err != nil {
		r.stop()
		return nil, err
	}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: api.InventoryWorkflowID(api.DefaultTaskQueue), TaskQueue: api.DefaultTaskQueue},
		api.InventoryWorkflowType, in); err != nil {
		r.stop()
		return nil, fmt.Errorf("starting the inventory with %d clusters: %w", len(clusters), err)
	}
	if err := r.startWorker(ctx); err != nil {
		r.stop()
		return nil, err
	}
	if err := r.startAgents(ctx, clusters); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// startWorker starts the run's workers on its Temporal and task queue and waits until each one polls
// both the workflow and the activity queue, so that a measurement never includes a worker's start-up.
func (r *run) startWorker(ctx context.Context) error {
	r.workers = nil
	if r.keyFile == "" {
		var err error
		if r.keyFile, r.key, err = devenv.NewInstallationKey(r.dir); err != nil {
			return err
		}
	}
	for i := 0; i < r.workerCount; i++ {
		w, err := devenv.StartWorker(devenv.WorkerOptions{Bin: r.e.cfg.BinDir, Address: r.temporal.Address(), TaskQueue: api.DefaultTaskQueue,
			CacheDir: filepath.Join(r.dir, workerFile("gitcache", i)), LogFile: r.workerLog(i), ExtraArgs: r.workerArgsFor(i),
			InstallationKeyFile: r.keyFile})
		if err != nil {
			return err
		}
		r.workers = append(r.workers, w)
	}
	// Generous: a benchmark may share its 2 cores with a build; the deadline only catches a wedged worker.
	deadline := time.Now().Add(3 * time.Minute)
	for i, w := range r.workers {
		for !r.polled(ctx, w, enumspb.TASK_QUEUE_TYPE_WORKFLOW) || !r.polled(ctx, w, enumspb.TASK_QUEUE_TYPE_ACTIVITY) {
			if !w.Alive() {
				return fmt.Errorf("flotilla-worker exited at start-up:\n%s", proc.Tail(r.workerLog(i), 20))
			}
			if time.Now().After(deadline) {
				return errors.New("flotilla-worker does not poll its task queue after 3 minutes")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// workerFile names worker i's own file or folder: the first worker keeps the name a one-worker run has
// always used, the others get theirs, so that no two workers share a git cache.
func workerFile(name string, i int) string {
	if i == 0 {
		return name
	}
	ext := filepath.Ext(name)
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(name, ext), i+1, ext)
}

func (r *run) workerLog(i int) string { return filepath.Join(r.dir, workerFile("worker.log", i)) }

// workerArgsFor is worker i's command line beyond devenv's. The first worker's is the run's; the others
// also turn off the listeners the environment may turn on (FLOTILLA_PPROF_LISTEN, FLOTILLA_METRICS_LISTEN,
// a debugging aid for one worker), which would otherwise clash on one port and stop them at start-up.
func (r *run) workerArgsFor(i int) []string {
	if i == 0 {
		return r.workerArgs
	}
	return append(append([]string{}, r.workerArgs...), "--pprof-listen=", "--metrics-listen=")
}

// polled reports whether worker process w polls the task queue.
func (r *run) polled(ctx context.Context, w *proc.Process, t enumspb.TaskQueueType) bool {
	resp, err := r.client.DescribeTaskQueue(ctx, api.DefaultTaskQueue, t)
	if err != nil {
		return false
	}
	pid := fmt.Sprintf("%d@", w.PID())
	for _, p := range resp.GetPollers() {
		if strings.HasPrefix(p.GetIdentity(), pid) {
			return true
		}
	}
	return false
}

// killWorker kills every worker as a crash would, keeping their CPU time for the totals.
func (r *run) killWorker() error {
	var errs []error
	for _, w := range r.workers {
		r.workerCPUBefore += cpuSeconds(w.PID())
		errs = append(errs, w.Kill())
	}
	return errors.Join(errs...)
}

// workerCPU is the CPU time of every worker of the run, killed generations included.
func (r *run) workerCPU() float64 {
	sum := r.workerCPUBefore
	for _, w := range r.workers {
		sum += cpuSeconds(w.PID())
	}
	return sum
}

// workerMemoryMB is the highest VmHWM among the workers, and the VmRSS of all of them together.
func (r *run) workerMemoryMB() (peak, current float64) {
	for _, w := range r.workers {
		p, c := memoryMB(w.PID())
		peak, current = max(peak, p), current+c
	}
	return peak, current
}

func (r *run) stop() {
	for _, a := range r.agents {
		_ = a.Stop(5 * time.Second)
	}
	for _, w := range r.workers {
		_ = w.Stop(5 * time.Second)
	}
	if r.client != nil {
		r.client.Close()
	}
	if r.temporal != nil {
		_ = r.temporal.Stop()
	}
}

// startGitRepo starts a GitRepo workflow as `flotilla apply` would.
func (r *run) startGitRepo(ctx context.Context, in api.GitRepoInput) error {
	_, err := r.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: api.GitRepoWorkflowID(in.Metadata.Name), TaskQueue: api.DefaultTaskQueue, WorkflowTaskTimeout: api.GitRepoTaskTimeout,
	}, api.GitRepoWorkflowType, in)
	return err
}

// readiness is what the GitRepo publishes in its search attributes: "ready/desired" clusters and the commit.
type readiness struct {
	ready, desired int
	commit         string
}

// describe reads the GitRepo's published readiness from its latest run. It costs the worker nothing and is
// no Temporal action: the search attributes are written in the same workflow task as the status changes.
func (r *run) describe(ctx context.Context, gitRepo string) (readiness, error) {
	resp, err := r.client.DescribeWorkflowExecution(ctx, api.GitRepoWorkflowID(gitRepo), "")
	if err != nil {
		return readiness{}, err
	}
	fields := resp.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	var out readiness
	dc := converter.GetDefaultDataConverter()
	if p := fields["FlotillaReady"]; p != nil {
		var s string
		if dc.FromPayload(p, &s) == nil {
			fmt.Sscanf(s, "%d/%d", &out.ready, &out.desired)
		}
	}
	if p := fields["FlotillaCommit"]; p != nil {
		_ = dc.FromPayload(p, &out.commit)
	}
	return out, nil
}

// status runs the GitRepo's status query.
func (r *run) status(ctx context.Context, gitRepo string) (api.GitRepoStatus, error) {
	r.queries.Add(1)
	var st api.GitRepoStatus
	v, err := r.client.QueryWorkflow(ctx, api.GitRepoWorkflowID(gitRepo), "", api.QueryStatus)
	if err != nil {
		return st, err
	}
	return st, v.Get(&st)
}

// waitAllReady polls until every one of n clusters reports all bundles Ready at commit, and returns when
// that was first seen. progress, if set, is called with the ready count after each poll.
func (r *run) waitAllReady(ctx context.Context, gitRepo string, n, bundles int, commit string, timeout time.Duration,
	progress func(ready int) error) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	var last readiness
	var lastErr error
	for time.Now().Before(deadline) {
		rd, err := r.describe(ctx, gitRepo)
		seen := time.Now()
		if err == nil {
			last = rd
			if progress != nil {
				if perr := progress(rd.ready); perr != nil {
					return time.Time{}, perr
				}
			}
			if rd.ready == n && rd.desired == n && rd.commit == commit {
				// Confirm with the status every user sees, down to each bundle.
				st, err := r.status(ctx, gitRepo)
				if err == nil && st.ReadyClusters == n && st.DesiredReadyClusters == n && st.Summary.Ready == n*bundles && st.Commit == commit {
					return seen, nil
				}
				lastErr = err
			}
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	msg := fmt.Sprintf("gitrepo %s: %d/%d clusters ready (commit %s) after %s", gitRepo, last.ready, n, api.ShortCommit(last.commit), timeout)
	if st, err := r.status(ctx, gitRepo); err == nil {
		msg += ": " + truncate(st.Message, 600)
	}
	if lastErr != nil {
		msg += fmt.Sprintf(" (last error: %v)", lastErr)
	}
	return time.Time{}, errors.New(msg)
}

// historyEvents sums the history length of every run of a workflow ID and counts the runs.
func (r *run) historyEvents(ctx context.Context, workflowID string) (events int64, runs int, err error) {
	query := fmt.Sprintf("WorkflowId = '%s'", workflowID)
	var token []byte
	for {
		resp, err := r.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return 0, 0, err
		}
		for _, ex := range resp.GetExecutions() {
			events += ex.GetHistoryLength()
			runs++
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return events, runs, nil
		}
	}
}

// snapshot is every counter at one moment.
type snapshot struct {
	at                           time.Time
	apiRequests, actions         float64
	queries                      int64
	worker, temporal, kube, etcd float64
	bench                        float64
	// worker is the CPU of every worker; workerPeakMB the highest worker's VmHWM, workerCurrentMB all
	// workers' VmRSS together (one worker's own figures in a one-worker run).
	workerPeakMB, workerCurrentMB float64
	// agents is the CPU of every flotilla-agent of the run, agentPeakMB the highest VmHWM among them.
	agents, agentPeakMB float64
	agentCount          int
}

func (r *run) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now(), queries: r.queries.Load()}
	var err error
	if s.apiRequests, err = r.e.apiRequests(ctx); err != nil {
		return s, fmt.Errorf("reading API server metrics: %w", err)
	}
	if r.temporal != nil {
		if s.actions, err = temporalActions(ctx, r.temporal.MetricsURL(), "default"); err != nil {
			return s, fmt.Errorf("reading Temporal metrics: %w", err)
		}
		s.temporal = cpuSeconds(r.temporal.PID())
	}
	if len(r.workers) > 0 {
		s.worker = r.workerCPU()
		s.workerPeakMB, s.workerCurrentMB = r.workerMemoryMB()
	}
	for _, a := range r.agents {
		s.agents += cpuSeconds(a.PID())
		peak, _ := memoryMB(a.PID())
		s.agentPeakMB = max(s.agentPeakMB, peak)
	}
	s.agentCount = len(r.agents)
	apis, etcd := r.e.apiServerPIDs()
	for _, pid := range apis {
		s.kube += cpuSeconds(pid)
	}
	s.etcd = cpuSeconds(etcd)
	s.bench = cpuSeconds(os.Getpid())
	return s, nil
}

// delta is what happened between two snapshots.
type delta struct {
	seconds                             float64
	apiRequests, actions                float64
	worker, temporal, kube, etcd, bench float64
	agents                              float64
}

func diff(a, b snapshot) delta {
	return delta{
		seconds:     b.at.Sub(a.at).Seconds(),
		apiRequests: b.apiRequests - a.apiRequests,
		// The benchmark's own status queries are actions too; they are not Flotilla's.
		actions:  b.actions - a.actions - float64(b.queries-a.queries),
		worker:   b.worker - a.worker,
		temporal: b.temporal - a.temporal,
		kube:     b.kube - a.kube,
		etcd:     b.etcd - a.etcd,
		bench:    b.bench - a.bench,
		agents:   b.agents - a.agents,
	}
}

// envSnapshot reads the counters that exist without Temporal (the direct baseline's phase).
func (e *env) snapshot(ctx context.Context) (snapshot, error) {
	r := &run{e: e}
	return r.snapshot(ctx)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// writeTimeline writes a workflow's history as one line per event (offset from its start, event type,
// activity or signal name) to <run dir>/timeline-<id>.txt, for finding where the time goes.
func (r *run) writeTimeline(ctx context.Context, workflowID string) error {
	it := r.client.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var b strings.Builder
	var start time.Time
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err
		}
		t := ev.GetEventTime().AsTime()
		if start.IsZero() {
			start = t
		}
		what := ""
		switch {
		case ev.GetActivityTaskScheduledEventAttributes() != nil:
			what = ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
		case ev.GetWorkflowExecutionSignaledEventAttributes() != nil:
			what = ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName()
		case ev.GetTimerStartedEventAttributes() != nil:
			what = ev.GetTimerStartedEventAttributes().GetStartToFireTimeout().AsDuration().String()
		}
		fmt.Fprintf(&b, "%8.3f %4d %s %s\n", t.Sub(start).Seconds(), ev.GetEventId(), strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_"), what)
	}
	name := strings.NewReplacer("/", "_").Replace(workflowID)
	return os.WriteFile(filepath.Join(r.dir, "timeline-"+name+".txt"), []byte(b.String()), 0o644)
}

// restConfig is the client configuration of a kubeconfig with its certificates read into memory. Given
// the files instead, client-go keeps re-reading them for rotation as long as the process lives, and logs
// an error every few seconds once a run's folder is removed.
func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", kubeconfig, err)
	}
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = "", "", ""
	return cfg, nil
}
