package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// serviceAccountDir is where every pod's service account token and CA are mounted (a variable for tests).
var serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// inClusterKubeconfig writes a kubeconfig for the pod's own service account into dir and returns its path:
// the agent's cluster client (agentclient) is built from a kubeconfig, and one that names the token file,
// not the token, follows the kubelet's rotation of it.
func inClusterKubeconfig(dir string) (string, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return "", fmt.Errorf("no --kubeconfig (or KUBECONFIG) and not running in a pod (KUBERNETES_SERVICE_HOST is unset): give the agent its cluster's kubeconfig")
	}
	token, ca := filepath.Join(serviceAccountDir, "token"), filepath.Join(serviceAccountDir, "ca.crt")
	for _, f := range []string{token, ca} {
		if _, err := os.Stat(f); err != nil {
			return "", fmt.Errorf("in-cluster service account: %w", err)
		}
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: in-cluster
  cluster:
    server: https://%s
    certificate-authority: %s
users:
- name: agent
  user:
    tokenFile: %s
contexts:
- name: in-cluster
  context: {cluster: in-cluster, user: agent}
current-context: in-cluster
`, net.JoinHostPort(host, port), ca, token)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "in-cluster.kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		return "", fmt.Errorf("writing the in-cluster kubeconfig: %w", err)
	}
	return path, nil
}
