// Package localk8s runs real local Kubernetes clusters from binaries built off the Go module proxy: one
// etcd, one kube-apiserver per cluster (own etcd prefix, own port, own loopback service CIDR), and for
// clusters that run workloads, kube-controller-manager, kube-scheduler and kwok with one fake node, so
// Deployments really become Ready. Everything listens on 127.0.0.1 only, but the API servers when
// Options.Address names another of the host's addresses.
package localk8s

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flotilla-gitops/flotilla/tests/env/proc"
)

//go:embed kwok-stages.yaml
var kwokStages []byte

const fakeNode = `apiVersion: v1
kind: Node
metadata:
  name: kwok-node-0
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: kwok-node-0
    kubernetes.io/os: linux
    type: kwok
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
`

// ClusterOptions describe one cluster.
type ClusterOptions struct {
	Name string
	// Workloads adds kube-controller-manager, kube-scheduler and kwok with a fake node.
	Workloads bool
}

// Options describe an Env.
type Options struct {
	Dir, BinDir string
	Clusters    []ClusterOptions
	Logger      func(format string, args ...any)
	// Detached keeps the clusters running after this process exits (`make up`).
	Detached bool
	// Address is where the API servers listen, 127.0.0.1 when empty. The docker-compose test sets the
	// host's address on the Docker bridge, so that workers in containers reach the clusters too.
	Address string
}

type cluster struct {
	opts       ClusterOptions
	index      int
	port       int
	dir        string
	kubeconfig string
	apiserver  *proc.Process
	workers    []*proc.Process
}

// Env is a set of running clusters.
type Env struct {
	o        Options
	pki      pki
	etcd     *proc.Process
	etcdURL  string
	mu       sync.Mutex
	clusters map[string]*cluster
	order    []string
	next     int
}

func (e *Env) logf(format string, args ...any) {
	if e.o.Logger != nil {
		e.o.Logger(format, args...)
	}
}

// Start runs etcd and the clusters, in parallel, and waits until they serve.
func Start(ctx context.Context, o Options) (*Env, error) {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	e := &Env{o: o, clusters: map[string]*cluster{}}
	var err error
	if e.pki, err = loadOrCreatePKI(filepath.Join(o.Dir, "pki"), e.address()); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := e.startEtcd(ctx); err != nil {
		return nil, err
	}
	errs := make([]error, len(o.Clusters))
	var wg sync.WaitGroup
	for i, c := range o.Clusters {
		wg.Add(1)
		go func(i int, c ClusterOptions) {
			defer wg.Done()
			errs[i] = e.AddCluster(ctx, c)
		}(i, c)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = e.Stop()
		return nil, err
	}
	e.logf("%d cluster(s) ready in %s", len(o.Clusters), time.Since(start).Round(100*time.Millisecond))
	return e, nil
}

func (e *Env) bin(name string) string { return filepath.Join(e.o.BinDir, name) }

// PIDDir holds the pid files of every process of the Env.
func (e *Env) PIDDir() string { return filepath.Join(e.o.Dir, "pids") }

func (e *Env) startEtcd(ctx context.Context) error {
	ports := make([]int, 3)
	for i := range ports {
		p, err := proc.FreePort()
		if err != nil {
			return err
		}
		ports[i] = p
	}
	e.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	p, err := proc.Start(proc.Spec{Detached: e.o.Detached, Name: "etcd", Path: e.bin("etcd"), Args: []string{
		"--name", "flotilla", "--data-dir", filepath.Join(e.o.Dir, "etcd"),
		"--listen-client-urls", e.etcdURL, "--advertise-client-urls", e.etcdURL,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "flotilla=" + peer,
		"--listen-metrics-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[2]),
		"--unsafe-no-fsync", "--log-level", "warn",
	}, LogFile: filepath.Join(e.o.Dir, "logs", "etcd.log"), PIDFile: filepath.Join(e.PIDDir(), "etcd.pid")})
	if err != nil {
		return err
	}
	e.etcd = p
	return waitFor(ctx, 30*time.Second, p, filepath.Join(e.o.Dir, "logs", "etcd.log"), "etcd", func() bool {
		resp, err := http.Get(e.etcdURL + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// AddCluster starts one more cluster on the Env's etcd.
func (e *Env) AddCluster(ctx context.Context, o ClusterOptions) error {
	port, err := proc.FreePort()
	if err != nil {
		return err
	}
	e.mu.Lock()
	if _, dup := e.clusters[o.Name]; dup {
		e.mu.Unlock()
		return fmt.Errorf("cluster %q exists", o.Name)
	}
	c := &cluster{opts: o, index: e.next, port: port, dir: filepath.Join(e.o.Dir, o.Name)}
	e.next++
	e.clusters[o.Name] = c
	e.order = append(e.order, o.Name)
	e.mu.Unlock()
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(c.kubeconfig, []byte(e.kubeconfigFor(c)), 0o600); err != nil {
		return err
	}
	start := time.Now()
	if err := e.startAPIServer(ctx, c); err != nil {
		return err
	}
	if o.Workloads {
		if err := e.startWorkers(ctx, c); err != nil {
			return err
		}
	}
	e.logf("cluster %s ready on https://%s:%d in %s (workloads %v)", o.Name, e.address(), port, time.Since(start).Round(100*time.Millisecond), o.Workloads)
	return nil
}

// address is where the API servers listen (Options.Address).
func (e *Env) address() string {
	if e.o.Address != "" {
		return e.o.Address
	}
	return "127.0.0.1"
}

func (e *Env) kubeconfigFor(c *cluster) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: https://%[6]s:%[2]d
    certificate-authority: %[3]s
users:
- name: admin
  user:
    client-certificate: %[4]s
    client-key: %[5]s
contexts:
- name: %[1]s
  context: {cluster: %[1]s, user: admin}
current-context: %[1]s
`, c.opts.Name, c.port, e.pki.CA, e.pki.AdminCert, e.pki.AdminKey, e.address())
}

func (e *Env) startAPIServer(ctx context.Context, c *cluster) error {
	// A loopback service CIDR per cluster keeps every ClusterIP the apiserver might dial on 127.0.0.0/8.
	args := []string{
		"--etcd-servers=" + e.etcdURL, "--etcd-prefix=/" + c.opts.Name,
		"--bind-address=" + e.address(), "--advertise-address=" + e.address(), fmt.Sprintf("--secure-port=%d", c.port),
		"--cert-dir=" + filepath.Join(c.dir, "certs"),
		"--tls-cert-file=" + e.pki.ServerCert, "--tls-private-key-file=" + e.pki.ServerKey,
		"--client-ca-file=" + e.pki.CA,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + e.pki.SAPub, "--service-account-signing-key-file=" + e.pki.SAKey,
		fmt.Sprintf("--service-cluster-ip-range=127.%d.%d.0/24", 101+c.index/250, c.index%250),
		"--endpoint-reconciler-type=none", "--authorization-mode=RBAC", "--allow-privileged=true", "--profiling=false",
	}
	if !c.opts.Workloads {
		args = append(args, "--disable-admission-plugins=ServiceAccount")
	}
	log := filepath.Join(c.dir, "apiserver.log")
	p, err := proc.Start(proc.Spec{Detached: e.o.Detached, Name: c.opts.Name + "-apiserver", Path: e.bin("kube-apiserver"), Args: args,
		LogFile: log, PIDFile: filepath.Join(e.PIDDir(), c.opts.Name+"-apiserver.pid")})
	if err != nil {
		return err
	}
	c.apiserver = p
	client := e.httpClient()
	return waitFor(ctx, 90*time.Second, p, log, "cluster "+c.opts.Name+" kube-apiserver", func() bool {
		resp, err := client.Get(fmt.Sprintf("https://%s:%d/readyz", e.address(), c.port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

func (e *Env) httpClient() *http.Client {
	pool := x509.NewCertPool()
	if ca, err := os.ReadFile(e.pki.CA); err == nil {
		pool.AppendCertsFromPEM(ca)
	}
	cert, _ := tls.LoadX509KeyPair(e.pki.AdminCert, e.pki.AdminKey)
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
	}}
}

// The fake node must look alive for hours. Without a node lease, kwok's default node heartbeat patches
// the node's status every 20 s plus up to 25 s of jitter (kwok's node-heartbeat stage), and later still
// on a loaded machine, which overruns kube-controller-manager's default 50 s grace period: the node goes
// NotReady and every pod with it, and kwok's pod stages never set them back. With a lease kwok renews it
// every quarter of its duration, as a kubelet does, so the controller sees a heartbeat every 10 s; the
// longer grace period is a second line for a kwok starved of CPU for a while.
const (
	nodeLeaseSeconds = 40
	// NodeMonitorGracePeriod is how long a node may go without a heartbeat before it is NotReady.
	NodeMonitorGracePeriod = 2 * time.Minute
)

func (e *Env) startWorkers(ctx context.Context, c *cluster) error {
	kc := c.kubeconfig
	stages := filepath.Join(c.dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o644); err != nil {
		return err
	}
	specs := []proc.Spec{
		{Name: c.opts.Name + "-controller-manager", Path: e.bin("kube-controller-manager"), Args: []string{
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--secure-port=0", "--leader-elect=false", "--service-account-private-key-file=" + e.pki.SAKey,
			"--root-ca-file=" + e.pki.CA, "--use-service-account-credentials=false", "--controllers=*",
			"--flex-volume-plugin-dir=" + filepath.Join(c.dir, "flex"),
			"--node-monitor-grace-period=" + NodeMonitorGracePeriod.String(),
		}},
		{Name: c.opts.Name + "-scheduler", Path: e.bin("kube-scheduler"), Args: []string{
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--secure-port=0", "--leader-elect=false",
		}},
		{Name: c.opts.Name + "-kwok", Path: e.bin("kwok"), Args: []string{
			"--kubeconfig=" + kc, "--manage-all-nodes=true", "--node-ip=127.0.0.1", "--cidr=10.244.0.1/24", "--config=" + stages,
			fmt.Sprintf("--node-lease-duration-seconds=%d", nodeLeaseSeconds),
		}},
	}
	for _, s := range specs {
		s.LogFile = filepath.Join(c.dir, strings.TrimPrefix(s.Name, c.opts.Name+"-")+".log")
		s.PIDFile = filepath.Join(e.PIDDir(), s.Name+".pid")
		s.Detached = e.o.Detached
		p, err := proc.Start(s)
		if err != nil {
			return err
		}
		c.workers = append(c.workers, p)
	}
	return e.createNode(ctx, c)
}

// createNode registers kwok's fake node and waits for it to be Ready, through the REST API.
func (e *Env) createNode(ctx context.Context, c *cluster) error {
	client := e.httpClient()
	base := fmt.Sprintf("https://%s:%d", e.address(), c.port)
	// Asked again until the API server answers: on a loaded machine one request can outlast the client's
	// timeout, and one that did create the node meanwhile is answered 409 the next time.
	var created error
	if err := waitFor(ctx, 60*time.Second, c.apiserver, filepath.Join(c.dir, "apiserver.log"), "cluster "+c.opts.Name+" creating the kwok node", func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/nodes", strings.NewReader(fakeNode))
		req.Header.Set("Content-Type", "application/yaml")
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusConflict:
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			return false
		default:
			created = fmt.Errorf("cluster %s: creating the kwok node: HTTP %d", c.opts.Name, resp.StatusCode)
		}
		return true
	}); err != nil {
		return err
	}
	if created != nil {
		return created
	}
	return waitFor(ctx, 60*time.Second, c.workers[2], filepath.Join(c.dir, "kwok.log"), "cluster "+c.opts.Name+" kwok node", func() bool {
		resp, err := client.Get(base + "/api/v1/nodes/kwok-node-0")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var node struct {
			Status struct {
				Conditions []struct{ Type, Status string } `json:"conditions"`
			} `json:"status"`
		}
		if json.NewDecoder(resp.Body).Decode(&node) != nil {
			return false
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == "Ready" && cond.Status == "True" {
				return true
			}
		}
		return false
	})
}

// waitFor polls ready until it holds, the process dies, or the time is up; failures include the log's tail.
func waitFor(ctx context.Context, timeout time.Duration, p *proc.Process, log, what string, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		if !p.Alive() {
			return fmt.Errorf("%s exited during start-up:\n%s", what, proc.Tail(log, 15))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s:\n%s", what, timeout, proc.Tail(log, 15))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (e *Env) get(name string) *cluster {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.clusters[name]
}

// Kubeconfig is the path of a cluster's admin kubeconfig.
func (e *Env) Kubeconfig(name string) string {
	if c := e.get(name); c != nil {
		return c.kubeconfig
	}
	return ""
}

// Server is a cluster's API URL.
func (e *Env) Server(name string) string {
	if c := e.get(name); c != nil {
		return fmt.Sprintf("https://%s:%d", e.address(), c.port)
	}
	return ""
}

// Names lists the clusters in the order they were added.
func (e *Env) Names() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.order...)
}

// StopAPIServer makes a cluster unreachable (its data stays in etcd).
func (e *Env) StopAPIServer(name string) error {
	c := e.get(name)
	if c == nil {
		return fmt.Errorf("no cluster %q", name)
	}
	return c.apiserver.Kill()
}

// StartAPIServer brings a stopped cluster back on the same port with the same data.
func (e *Env) StartAPIServer(ctx context.Context, name string) error {
	c := e.get(name)
	if c == nil {
		return fmt.Errorf("no cluster %q", name)
	}
	return e.startAPIServer(ctx, c)
}

// Stop ends every process of the Env, by PID.
func (e *Env) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range e.clusters {
		for _, p := range append(c.workers, c.apiserver) {
			if p == nil {
				continue
			}
			wg.Add(1)
			go func(p *proc.Process) { defer wg.Done(); _ = p.Kill() }(p)
		}
	}
	wg.Wait()
	if e.etcd != nil {
		return e.etcd.Stop(5 * time.Second)
	}
	return nil
}
