package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ownKubeconfigs writes the kubeconfigs the test's own clients read: a backing cluster's kubeconfig with
// its certificate files read in. client-go starts, for a client whose certificate comes from files, a
// reloader that lives as long as the process; the test binary outlives every stack's folder, and each
// such reloader would then log "Loading client cert failed" every few minutes until it exits.
type ownKubeconfigs struct {
	mu sync.Mutex
}

// path writes the self-contained copy of a kubeconfig into dir when its content changed (an API server
// restarted on another port rewrites its kubeconfig), and returns the copy's path.
func (o *ownKubeconfigs) path(dir, backing, kubeconfig string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("cluster %s: %w", backing, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return "", fmt.Errorf("cluster %s: reading the files of kubeconfig %s: %w", backing, kubeconfig, err)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", fmt.Errorf("cluster %s: %w", backing, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	path := filepath.Join(dir, "own-kubeconfigs", backing)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	// Renamed into place: a client of another goroutine may be reading the previous copy.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}
