package agentclient

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Config names one cluster: a kubeconfig file and a context in it.
type Config struct {
	KubeconfigPath string
	Context        string  // empty: current-context
	QPS            float32 // 0 ⇒ DefaultQPS
	Burst          int     // 0 ⇒ DefaultBurst
}

// Pool caches one Client per Config, and per content of the kubeconfig file, so that an edited kubeconfig
// (rotated credentials, moved server) is picked up on the next Get while the REST config, the
// memory-cached discovery is otherwise built once per cluster per process, and the REST mapper once per
// distinct discovery.
// A Pool is safe for concurrent use.
type Pool struct {
	log *zap.Logger

	mu      sync.Mutex
	entries map[Config]poolEntry
	// locks outlive a Client rebuilt after a kubeconfig edit, so release operations stay serialised.
	locks map[clusterKey]*releaseLocks
	// mappers is shared by every Client of the Pool (see mapperTable).
	mappers *mapperTable
}

type poolEntry struct {
	hash   [sha256.Size]byte
	client *Client
}

// clusterKey identifies a cluster independently of client tuning (QPS, Burst); context is the resolved
// context name, so "" and the current-context share their locks.
type clusterKey struct{ path, context string }

// NewPool returns an empty Pool logging to log.
func NewPool(log *zap.Logger) *Pool {
	if log == nil {
		log = zap.NewNop()
	}
	return &Pool{log: log, entries: map[Config]poolEntry{}, locks: map[clusterKey]*releaseLocks{}, mappers: newMapperTable()}
}

// Get returns the Client for cfg, building it on first use or when the kubeconfig file changed.
// It reads the kubeconfig file (to notice edits) but never contacts the cluster.
func (p *Pool) Get(cfg Config) (*Client, error) {
	if cfg.KubeconfigPath == "" {
		return nil, fmt.Errorf("agentclient: Config.KubeconfigPath is empty")
	}
	path, err := filepath.Abs(cfg.KubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", cfg.KubeconfigPath, err)
	}
	cfg.KubeconfigPath = path
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return p.get(cfg, data)
}

// GetFrom is Get for a kubeconfig held in memory (read from a Secret, say): cfg.KubeconfigPath names its
// source in messages and keys the cache, and a changed content rebuilds the Client as an edited file does.
func (p *Pool) GetFrom(cfg Config, kubeconfig []byte) (*Client, error) {
	if cfg.KubeconfigPath == "" {
		return nil, fmt.Errorf("agentclient: Config.KubeconfigPath is empty")
	}
	return p.get(cfg, kubeconfig)
}

func (p *Pool) get(cfg Config, data []byte) (*Client, error) {
	path := cfg.KubeconfigPath
	hash := sha256.Sum256(data)

	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.entries[cfg]; ok && e.hash == hash {
		return e.client, nil
	}
	c, err := newClient(cfg, data, p.mappers, p.log)
	if err != nil {
		return nil, err
	}
	key := clusterKey{path: path, context: c.name}
	if c.locks = p.locks[key]; c.locks == nil {
		c.locks = newReleaseLocks()
		p.locks[key] = c.locks
	}
	if _, rebuilt := p.entries[cfg]; rebuilt {
		p.log.Info("kubeconfig changed, rebuilt cluster client", zap.String("kubeconfig", path), zap.String("cluster", c.name))
	}
	p.entries[cfg] = poolEntry{hash: hash, client: c}
	return c, nil
}

// newClient builds everything a Client needs without any network call; discovery and the REST mapper
// fill themselves on first use.
func newClient(cfg Config, kubeconfig []byte, mappers *mapperTable, log *zap.Logger) (*Client, error) {
	raw, err := loadKubeconfig(cfg.KubeconfigPath, kubeconfig)
	if err != nil {
		return nil, err
	}
	name := cfg.Context
	if name == "" {
		name = raw.CurrentContext
	}
	if name == "" {
		return nil, fmt.Errorf("kubeconfig %s: no context given and no current-context set", cfg.KubeconfigPath)
	}
	if _, ok := raw.Contexts[name]; !ok {
		return nil, fmt.Errorf("kubeconfig %s: context %q not found", cfg.KubeconfigPath, name)
	}
	restConfig, err := clientcmd.NewNonInteractiveClientConfig(*raw, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: context %q: %w", cfg.KubeconfigPath, name, err)
	}
	restConfig.QPS, restConfig.Burst = cfg.QPS, cfg.Burst
	if restConfig.QPS == 0 {
		restConfig.QPS = DefaultQPS
	}
	if restConfig.Burst == 0 {
		restConfig.Burst = DefaultBurst
	}
	restConfig.UserAgent = userAgent

	fail := func(what string, err error) (*Client, error) {
		return nil, fmt.Errorf("cluster %s: building %s: %w", name, what, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return fail("discovery client", err)
	}
	cached := memory.NewMemCacheClient(dc)
	clientset, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fail("clientset", err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return fail("dynamic client", err)
	}
	meta, err := metadata.NewForConfig(restConfig)
	if err != nil {
		return fail("metadata client", err)
	}
	c := &Client{
		name:       name,
		log:        log.With(zap.String("cluster", name)),
		kubeconfig: cfg.KubeconfigPath,
		raw:        raw,
		restConfig: restConfig,
		discovery:  cached,
		mapper:     newClusterMapper(cached, mappers),
		clientset:  clientset,
		dynamic:    dyn,
		metadata:   meta,
	}
	return c, nil
}

// loadKubeconfig parses data the way clientcmd's loading rules parse a file: relative certificate and
// key paths resolve against the kubeconfig's directory.
func loadKubeconfig(path string, data []byte) (*clientcmdapi.Config, error) {
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	for _, c := range raw.Clusters {
		c.LocationOfOrigin = path
	}
	for _, a := range raw.AuthInfos {
		a.LocationOfOrigin = path
	}
	for _, c := range raw.Contexts {
		c.LocationOfOrigin = path
	}
	if err := clientcmd.ResolveLocalPaths(raw); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return raw, nil
}

// copyRESTConfig hands out copies: Helm and kubectl code may set fields on the config they get.
func copyRESTConfig(c *rest.Config) *rest.Config { return rest.CopyConfig(c) }
