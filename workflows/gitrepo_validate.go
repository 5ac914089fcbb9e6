package workflows

import (
	"fmt"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"go.temporal.io/sdk/workflow"
)

// validateWorkspace checks a GitRepo's namespace against the workspace its run is started for
// (api.GitRepoInput.Workspace): a DNS label, and the namespace its metadata names if it names one. A run of
// fleet-default (no workspace) accepts any metadata.namespace, as every run did before workspaces.
func validateWorkspace(g fleet.GitRepo, workspace string) error {
	if workspace == "" {
		return nil
	}
	key := api.KeyOf(workspace, g.Metadata.Name)
	if err := api.CheckNamespace(workspace); err != nil {
		return fmt.Errorf("gitrepo %q: %w", key, err)
	}
	if ns := g.Metadata.Namespace; ns != "" && fleet.Workspace(ns) != key.Namespace {
		return fmt.Errorf("gitrepo %q: metadata.namespace %q is not its namespace %q", key, ns, key.Namespace)
	}
	return nil
}

func validatePollingInterval(_ workflow.Context, in api.SetPollingIntervalInput) error {
	d, err := time.ParseDuration(in.PollingInterval)
	if err != nil {
		return fmt.Errorf("pollingInterval %q: not a duration (e.g. \"30s\", \"5m\")", in.PollingInterval)
	}
	if d < MinPollingInterval {
		return fmt.Errorf("pollingInterval %q: must be at least %s", in.PollingInterval, MinPollingInterval)
	}
	return nil
}
