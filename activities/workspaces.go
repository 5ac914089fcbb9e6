package activities

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// A workspace as a boundary (ADR 27). Anyone who may use a Temporal namespace may start a GitRepo of any
// workspace on it and register any cluster: Temporal authorizes namespaces, not workspaces. So a trust
// zone gets a Temporal namespace of its own, and its installation's workers say which workspaces they
// serve and where each workspace's kubeconfigs are: a GitRepo or a cluster of another workspace is
// refused, and a cluster names only a kubeconfig of its own workspace's folder.

// WorkspacePolicy is what an installation's workers serve. The zero policy serves every workspace with
// any kubeconfig, as before workspaces were boundaries.
type WorkspacePolicy struct {
	// Workspaces are the only workspaces served; empty: every one.
	Workspaces []string
	// KubeconfigDir, when set, is where kubeconfigs are: a cluster of workspace W names only a kubeconfig
	// under KubeconfigDir/W.
	KubeconfigDir string
}

// serves refuses a workspace the installation does not serve, non-retryably, naming it and the flag.
func (p WorkspacePolicy) serves(workspace string) error {
	workspace = fleet.Workspace(workspace)
	if len(p.Workspaces) == 0 || slices.Contains(p.Workspaces, workspace) {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("workspace %q is not served by this installation (its workers serve %s: "+
		"--workspaces); its GitRepos and clusters belong on their own installation", workspace, strings.Join(p.Workspaces, ", ")), api.ErrTypeWorkspace, nil)
}

// kubeconfig refuses a cluster's kubeconfig path outside its workspace's folder.
func (p WorkspacePolicy) kubeconfig(workspace, cluster, path string) error {
	if p.KubeconfigDir == "" {
		return nil
	}
	workspace = fleet.Workspace(workspace)
	dir := filepath.Join(p.KubeconfigDir, workspace)
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		resolved = filepath.Clean(path)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		root = filepath.Clean(dir)
	}
	if rel, err := filepath.Rel(root, resolved); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf("cluster %q: kubeconfig %s is not in workspace %q's folder %s: a cluster names only a "+
		"kubeconfig of its own workspace (--kubeconfig-dir)", fleet.DisplayName(workspace, cluster), path, workspace, dir), api.ErrTypeWorkspace, nil)
}
