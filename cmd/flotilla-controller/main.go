// Command flotilla-controller is Flotilla's Kubernetes front door: it installs Fleet's
// CustomResourceDefinitions (fleet.cattle.io/v1alpha1 GitRepo, HelmOp, Cluster, ClusterGroup,
// GitRepoRestriction) in a management cluster, runs the objects there as `flotilla apply` runs their YAML,
// and writes each GitRepo's and HelmOp's status back in Fleet's shape (ADR 38).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/envdefault"
	"github.com/flotilla-gitops/flotilla/internal/fleetcrd"
	"github.com/flotilla-gitops/flotilla/internal/frontdoor"
	"github.com/flotilla-gitops/flotilla/internal/searchattr"
	"github.com/flotilla-gitops/flotilla/internal/temporalconn"
	"github.com/flotilla-gitops/flotilla/internal/zaplog"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "flotilla-controller:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("flotilla-controller", flag.ExitOnError)
	var conn temporalconn.Settings
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the management cluster (env KUBECONFIG); empty: in-cluster")
	skipCRDs := fs.Bool("skip-crds", false, "do not install or update the CustomResourceDefinitions at start (a chart or an operator does)")
	address := fs.String("address", envdefault.TemporalAddress(), "Temporal frontend host:port (env TEMPORAL_ADDRESS)")
	namespace := fs.String("temporal-namespace", envdefault.TemporalNamespace(), "Temporal namespace (env TEMPORAL_NAMESPACE)")
	taskQueue := fs.String("task-queue", envdefault.TaskQueue(), "the installation's task queue, as its workers' (env FLOTILLA_TASK_QUEUE)")
	logLevel := fs.String("log-level", envdefault.Or("FLOTILLA_LOG_LEVEL", "info"), "debug, info, warn or error (env FLOTILLA_LOG_LEVEL)")
	devLog := fs.Bool("dev-log", false, "human-readable logs instead of JSON")
	metrics := fs.String("metrics-listen", os.Getenv("FLOTILLA_CONTROLLER_METRICS_LISTEN"), "address for controller-runtime's Prometheus metrics, e.g. :8080; empty: none")
	probes := fs.String("health-listen", os.Getenv("FLOTILLA_CONTROLLER_HEALTH_LISTEN"), "address for /healthz and /readyz, e.g. :8081; empty: none")
	leader := fs.Bool("leader-elect", false, "elect one active controller among replicas (a Lease in the controller's namespace)")
	leaderNamespace := fs.String("leader-election-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the leader election Lease (env POD_NAMESPACE)")
	conn.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := api.CheckTaskQueue(*taskQueue); err != nil {
		return fmt.Errorf("--task-queue (or FLOTILLA_TASK_QUEUE): %w", err)
	}
	log, err := zaplog.New(*logLevel, *devLog)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck
	ctrl.SetLogger(crzap.New(crzap.UseDevMode(*devLog)))

	restConfig, err := restConfig(*kubeconfig)
	if err != nil {
		return err
	}
	restConfig.UserAgent = "flotilla-controller"
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	if !*skipCRDs {
		c, err := client.New(restConfig, client.Options{Scheme: scheme})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err = fleetcrd.Install(ctx, c)
		cancel()
		if err != nil {
			return err
		}
		log.Info("custom resource definitions installed")
	}

	conn.Address, conn.Namespace = *address, *namespace
	log.Info("connecting to Temporal", zap.Stringer("temporal", conn))
	tc, err := temporalconn.Dial(context.Background(), conn, zaplog.NewAdapter(log.Named("temporal")))
	if err != nil {
		return err
	}
	defer tc.Close()
	// The GitRepos it starts carry FlotillaManagedBy: check (and create where allowed) Flotilla's search
	// attributes first, as the worker does, so that a server without them is named at start.
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	created, err := searchattr.Ensure(sctx, searchattr.Service{Client: tc.OperatorService()}, *namespace, api.SearchAttributes)
	cancel()
	if err != nil {
		return err
	}
	if len(created) > 0 {
		log.Info("created search attributes", zap.String("temporalNamespace", *namespace), zap.Strings("names", created))
	}

	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme: scheme,
		// Fleet's objects are read unstructured, from the informers' caches like any typed object: the
		// status read-back re-reads each GitRepo every few seconds, which must not cost API requests.
		Client:                  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                 metricsserver.Options{BindAddress: orZero(*metrics)},
		HealthProbeBindAddress:  orZero(*probes),
		LeaderElection:          *leader,
		LeaderElectionID:        "flotilla-controller." + *taskQueue,
		LeaderElectionNamespace: *leaderNamespace,
	})
	if err != nil {
		return err
	}
	if *probes != "" {
		if err := mgr.AddHealthzCheck("ping", func(_ *http.Request) error { return nil }); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("ping", func(_ *http.Request) error { return nil }); err != nil {
			return err
		}
	}
	cfg := frontdoor.Config{Kube: mgr.GetClient(), Temporal: tc, TaskQueue: *taskQueue, Log: log.Named("frontdoor"), Now: time.Now}
	if err := frontdoor.Setup(mgr, cfg); err != nil {
		return err
	}
	log.Info("controller starting", zap.String("taskQueue", *taskQueue))
	return mgr.Start(ctrl.SetupSignalHandler())
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// orZero turns an empty address into controller-runtime's "0", which serves nothing.
func orZero(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}
