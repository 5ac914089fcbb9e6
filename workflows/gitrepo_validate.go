package workflows

import (
	"encoding/pem"
	"fmt"
	"regexp"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"go.temporal.io/sdk/workflow"
)

var gitRepoName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// MaxCABundle bounds a GitRepo's spec.caBundle: it travels in every poll's input, so it is a repository
// server's CA, not a system trust store.
const MaxCABundle = 64 << 10

// ValidateGitRepo checks a GitRepo without I/O; the CLI runs the same checks before starting anything.
func ValidateGitRepo(g fleet.GitRepo) error {
	return validateGitRepo(g, true)
}

// validateGitRepo checks a GitRepo; strictURL adds the credential checks of fleet.CheckRepoURL, which
// runs started before them did not make (see strictRepoURL).
func validateGitRepo(g fleet.GitRepo, strictURL bool) error {
	name := g.Metadata.Name
	if !gitRepoName.MatchString(name) || len(name) > 63 {
		return fmt.Errorf("metadata.name %q: must be a DNS label (lowercase letters, digits, '-'; at most 63 characters)", name)
	}
	if g.Spec.Repo == "" {
		return fmt.Errorf("gitrepo %q: spec.repo is required", name)
	}
	if g.Spec.HelmOp != nil {
		if g.Spec.Repo != fleet.HelmOpRepoPrefix+name {
			return fmt.Errorf("helmop %q: spec.repo %q: want %s%s", name, g.Spec.Repo, fleet.HelmOpRepoPrefix, name)
		}
	} else if err := fleet.CheckRepoURL(g.Spec.Repo); err != nil && strictURL {
		return fmt.Errorf("gitrepo %q: spec.repo: %w", name, err)
	}
	if n := len(g.Spec.CABundle); n > MaxCABundle {
		return fmt.Errorf("gitrepo %q: spec.caBundle: %d bytes, more than %d: give the repository server's CA, not a trust store", name, n, MaxCABundle)
	} else if n > 0 && !holdsPEMCertificate(g.Spec.CABundle) {
		return fmt.Errorf("gitrepo %q: spec.caBundle holds no PEM certificate (base64 of the PEM text, as in Fleet)", name)
	}
	if r := g.Spec.HelmRepoURLRegex; r != "" {
		if _, err := regexp.Compile(r); err != nil {
			return fmt.Errorf("gitrepo %q: spec.helmRepoURLRegex %q: %v", name, r, err)
		}
	}
	if g.Spec.PollingInterval != "" {
		if d, err := time.ParseDuration(g.Spec.PollingInterval); err != nil || d < 0 {
			return fmt.Errorf("gitrepo %q: spec.pollingInterval %q: not a duration like 15s or 1m", name, g.Spec.PollingInterval)
		}
	}
	return nil
}

// validateWorkspace checks a GitRepo's namespace against the workspace its run is started for
// (GitRepoInput.Workspace): a DNS label, and the namespace its metadata names if it names one. A run of
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

// holdsPEMCertificate says whether data has a PEM CERTIFICATE block. Workflow code cannot parse X.509
// (workflowcheck: it is not provably deterministic); the worker's TLS client refuses a block that is no
// certificate, naming the repository.
func holdsPEMCertificate(data []byte) bool {
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return false
		}
		if b.Type == "CERTIFICATE" {
			return true
		}
	}
}
