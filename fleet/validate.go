package fleet

import (
	"encoding/pem"
	"fmt"
	"regexp"
	"time"
)

var gitRepoName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// MaxCABundle bounds a GitRepo's spec.caBundle: it travels in every poll's input, so it is a repository
// server's CA, not a system trust store.
const MaxCABundle = 64 << 10

// ValidateGitRepo checks a GitRepo without I/O: the CLI before starting anything, the GitRepo workflow at
// start and on every spec change.
func ValidateGitRepo(g GitRepo) error {
	return validateGitRepo(g, true)
}

// ValidateGitRepoLegacyURL checks a GitRepo as runs started before the credential checks of CheckRepoURL
// did, which such runs must keep doing to replay: spec.repo is required but not checked for credentials.
func ValidateGitRepoLegacyURL(g GitRepo) error {
	return validateGitRepo(g, false)
}

// validateGitRepo checks a GitRepo; strictURL adds the credential checks of CheckRepoURL.
func validateGitRepo(g GitRepo, strictURL bool) error {
	name := g.Metadata.Name
	if !gitRepoName.MatchString(name) || len(name) > 63 {
		return fmt.Errorf("metadata.name %q: must be a DNS label (lowercase letters, digits, '-'; at most 63 characters)", name)
	}
	if g.Spec.Repo == "" {
		return fmt.Errorf("gitrepo %q: spec.repo is required", name)
	}
	if g.Spec.HelmOp != nil {
		if g.Spec.Repo != HelmOpRepoPrefix+name {
			return fmt.Errorf("helmop %q: spec.repo %q: want %s%s", name, g.Spec.Repo, HelmOpRepoPrefix, name)
		}
	} else if err := CheckRepoURL(g.Spec.Repo); err != nil && strictURL {
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
	if err := ValidateSyncWindows(g.Spec.SyncWindows); err != nil {
		return fmt.Errorf("gitrepo %q: %w", name, err)
	}
	return nil
}

// holdsPEMCertificate says whether data has a PEM CERTIFICATE block. The workflows validate with it, and
// workflow code cannot parse X.509 (workflowcheck: it is not provably deterministic); the worker's TLS
// client refuses a block that is no certificate, naming the repository.
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
