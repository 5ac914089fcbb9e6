// Package metrics is what Flotilla's processes serve on --metrics-listen: the Temporal SDK's worker
// metrics (SDKHandler) and Flotilla's own (Flotilla), in one Prometheus registry.
package metrics

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// Results of an operation, the values of the result label.
const (
	ResultOK      = "ok"
	ResultError   = "error"
	ResultSkipped = "skipped"
)

// Git operations, the values of the op label.
const (
	GitLsRemote = "ls-remote"
	GitCheckout = "checkout"
)

// Names of Flotilla's metrics: the dashboard's test checks its expressions against Names.
const (
	BundleApplies   = "flotilla_bundle_applies_total"
	ApplyDuration   = "flotilla_apply_duration_seconds"
	ObserveDuration = "flotilla_observe_duration_seconds"
	GitDuration     = "flotilla_git_duration_seconds"
	GitErrors       = "flotilla_git_errors_total"
	ChartFetches    = "flotilla_chart_fetches_total"
	Clusters        = "flotilla_clusters"
)

// Flotilla holds Flotilla's own metrics. Every method is safe on a nil *Flotilla, which records nothing:
// activities in unit tests and tools that serve no metrics need none.
//
// Labels stay bounded by the fleet's shape, not its history: no commit, release or bundle names on the
// per-apply series (a fleet of many bundles would multiply them by every cluster); which bundle failed
// is in the GitRepo's status and the logs. Only flotilla_clusters names GitRepos, one series per GitRepo
// and state.
type Flotilla struct {
	applies         *prometheus.CounterVec
	applyDuration   *prometheus.HistogramVec
	observeDuration prometheus.Histogram
	gitDuration     *prometheus.HistogramVec
	gitErrors       *prometheus.CounterVec
	chartFetches    *prometheus.CounterVec
}

// Registry is one process's metrics: Go's and the process's own, the SDK's and Flotilla's.
type Registry struct {
	Prom     *prometheus.Registry
	SDK      *SDKHandler
	Flotilla *Flotilla

	clusters *clusterCount
	// polling is set once the process polls its task queue: /healthz answers 200 from then on.
	polling atomic.Bool
}

// MarkPolling makes /healthz answer 200: the process is connected to Temporal and polls its queue.
// Before that (dialing, checking the namespace) it answers 503, so a container healthcheck or a
// readiness probe waits for a worker that can take work.
func (r *Registry) MarkPolling() {
	if r != nil {
		r.polling.Store(true)
	}
}

// New makes a registry with every metric registered, so that a scrape shows each Flotilla metric (at
// zero) before it is first recorded and dashboards and alerts find their series from the start.
func New() *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Applies take from well under a second (an unchanged release) to minutes (helm --wait): the buckets
	// reach 10 minutes.
	durations := []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	f := &Flotilla{
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{Name: BundleApplies,
			Help: "Release actions on one bundle of one cluster, by action (install, upgrade, rollback, recover) and result (ok, skipped: already in place, error)."},
			[]string{"action", "result"}),
		applyDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: ApplyDuration,
			Help: "Time to apply one bundle on one cluster (render, checks and the Helm action).", Buckets: durations},
			[]string{"result"}),
		observeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: ObserveDuration,
			Help: "Time of one check of a cluster: rendering and reading every bundle's release, and its objects when asked.", Buckets: durations}),
		gitDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: GitDuration,
			Help: "Time of git operations: ls-remote (each poll) and checkout (a clone or fetch, or a cached checkout).", Buckets: durations},
			[]string{"op"}),
		gitErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: GitErrors, Help: "Failed git operations, by op (ls-remote, checkout)."},
			[]string{"op"}),
		chartFetches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: ChartFetches,
			Help: "Chart archives downloaded (cache misses), by scheme (https, http, oci) and result."}, []string{"scheme", "result"}),
	}
	reg.MustRegister(f.applies, f.applyDuration, f.observeDuration, f.gitDuration, f.gitErrors, f.chartFetches)
	// Bounded label sets are seeded, so that "no failures" reads 0 rather than no data.
	for _, action := range []string{"install", "upgrade", "rollback", "recover"} {
		for _, r := range []string{ResultOK, ResultSkipped, ResultError} {
			f.applies.WithLabelValues(action, r)
			f.applyDuration.WithLabelValues(r)
		}
	}
	for _, scheme := range []string{"https", "http", "oci"} {
		for _, r := range []string{ResultOK, ResultError} {
			f.chartFetches.WithLabelValues(scheme, r)
		}
	}
	for _, op := range []string{GitLsRemote, GitCheckout} {
		f.gitDuration.WithLabelValues(op)
		f.gitErrors.WithLabelValues(op)
	}
	sdk := NewSDKHandler()
	clusters := newClusterCount()
	reg.MustRegister(sdk, clusters)
	return &Registry{Prom: reg, SDK: sdk, Flotilla: f, clusters: clusters}
}

// Names are the metric families registered by New besides the SDK's (temporal_*), Go's (go_*) and the
// process's (process_*).
var Names = []string{BundleApplies, ApplyDuration, ObserveDuration, GitDuration, GitErrors, ChartFetches, Clusters}

func result(err error) string {
	if err != nil {
		return ResultError
	}
	return ResultOK
}

// Apply records one bundle's release action; result is ResultOK, ResultSkipped or ResultError.
func (f *Flotilla) Apply(action, result string, took time.Duration) {
	if f == nil {
		return
	}
	f.applies.WithLabelValues(action, result).Inc()
	f.applyDuration.WithLabelValues(result).Observe(took.Seconds())
}

// Observe records one check of a cluster.
func (f *Flotilla) Observe(took time.Duration) {
	if f == nil {
		return
	}
	f.observeDuration.Observe(took.Seconds())
}

// Git records one git operation (GitLsRemote, GitCheckout).
func (f *Flotilla) Git(op string, took time.Duration, err error) {
	if f == nil {
		return
	}
	f.gitDuration.WithLabelValues(op).Observe(took.Seconds())
	if err != nil {
		f.gitErrors.WithLabelValues(op).Inc()
	}
}

// ChartFetch records one chart archive download.
func (f *Flotilla) ChartFetch(scheme string, err error) {
	if f == nil {
		return
	}
	switch scheme {
	case "https", "http", "oci":
	default:
		scheme = "other" // the label is the URL's, which a fleet.yaml writes: keep it to known values
	}
	f.chartFetches.WithLabelValues(scheme, result(err)).Inc()
}

// Listen serves a new Registry's metrics at addr when addr is set (--metrics-listen) and returns it with
// the function that stops serving; with no addr it returns a nil Registry (every metric a no-op) and a
// no-op stop. It listens before the process dials Temporal, so a busy address stops the process at once.
func Listen(addr string, log *zap.Logger) (*Registry, func(), error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	reg := New()
	srv, err := reg.Serve(addr)
	if err != nil {
		return nil, nil, err
	}
	log.Info("serving metrics", zap.String("address", srv.Addr))
	return reg, func() { _ = srv.Close() }, nil
}

// Serve serves the registry at /metrics, and readiness at /healthz, on addr until the server is closed; the server's Addr is the
// address it listens on. It listens before returning, so that a busy address stops the process at start
// rather than in a log line later.
func (r *Registry) Serve(addr string) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.Prom, promhttp.HandlerOpts{Registry: r.Prom}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !r.polling.Load() {
			http.Error(w, "not polling Temporal yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	srv := &http.Server{Addr: l.Addr().String(), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}
