package agentclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"go.uber.org/zap"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// RollbackRequest re-applies a revision (0: the latest) to repair drift.
type RollbackRequest struct {
	Namespace, Name string
	Revision        int
	Force           bool // replace objects whose changes cannot be patched (immutable fields)
	MaxHistory      int
	// KeepFailHistory keeps a failed attempt as a revision; without it the history looks as if it never ran.
	KeepFailHistory bool
}

// ApplyRequest is one Helm install or upgrade.
type ApplyRequest struct {
	Name, Namespace string
	Chart           *chart.Chart
	Values          map[string]any
	PostRenderer    postrender.PostRenderer // may be nil
	// Labels are stored as release labels and replace the previous revision's (Helm itself would merge
	// them); include api.LabelDeploymentID.
	Labels          map[string]string
	CreateNamespace bool // Install only
	// ConfineToNamespace, when set, refuses any object (manifest, hook, CRD, List item) that is
	// cluster-scoped or in another namespace, and limits the chart's lookups to that namespace.
	ConfineToNamespace string
	MaxHistory         int           // Upgrade only; 0 ⇒ DefaultMaxHistory
	Force              bool          // replace objects instead of patching them
	TakeOwnership      bool          // adopt existing objects not owned by this release
	Timeout            time.Duration // hooks and Wait; 0 ⇒ DefaultTimeout
	Wait               bool          // Helm's wait for readiness; off unless asked for
	WaitForJobs        bool
	Atomic             bool // install: uninstall on failure; upgrade: roll back on failure (implies Wait)
	Description        string
	// NamespaceLabels and NamespaceAnnotations are set on the release namespace before anything is
	// applied (fleet.yaml namespaceLabels, namespaceAnnotations); Pod Security labels are left alone.
	NamespaceLabels      map[string]string
	NamespaceAnnotations map[string]string
}

// ApplyResult is the revision an Install or Upgrade wrote.
type ApplyResult struct {
	Revision int
	Action   string // "install" or "upgrade"
}

func (r ApplyRequest) check() error {
	switch {
	case r.Name == "":
		return errors.New("release name is empty")
	case r.Namespace == "":
		return errors.New("namespace is empty")
	case r.Chart == nil || r.Chart.Metadata == nil:
		return errors.New("chart is missing")
	}
	return nil
}

func (r ApplyRequest) timeout() time.Duration {
	if r.Timeout <= 0 {
		return DefaultTimeout
	}
	return r.Timeout
}

func (r ApplyRequest) values() map[string]any {
	if r.Values == nil {
		return map[string]any{}
	}
	return r.Values
}

// Install installs a release that does not exist yet (or exists only as a failed first install whose
// record was deleted). Use Upgrade for an existing release.
func (c *Client) Install(ctx context.Context, r ApplyRequest) (ApplyResult, error) {
	if err := r.check(); err != nil {
		return ApplyResult{}, c.errorf(r.Namespace, r.Name, "install", err)
	}
	return exclusive(ctx, c, r.Namespace, r.Name, "install", func() (ApplyResult, error) {
		// Not cancellable on purpose: see the package doc. Helm's own cancellation would mark the release
		// failed while its goroutine goes on applying objects.
		opCtx := context.WithoutCancel(ctx)
		cfg, err := c.actionConfig(opCtx, r.Namespace, r.Name)
		if err != nil {
			return ApplyResult{}, c.errorf(r.Namespace, r.Name, "install", err)
		}
		c.serverSideValidation(opCtx, cfg)
		if err := confine(cfg, r.ConfineToNamespace); err != nil {
			return ApplyResult{}, c.errorf(r.Namespace, r.Name, "install", err)
		}
		if err := c.ensureNamespaceMetadata(ctx, r.Namespace, r.NamespaceLabels, r.NamespaceAnnotations); err != nil {
			return ApplyResult{}, c.errorf(r.Namespace, r.Name, "install", fmt.Errorf("namespaceLabels/namespaceAnnotations: %w", err))
		}
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace = r.Name, r.Namespace
		in.CreateNamespace = r.CreateNamespace
		in.Labels = maps.Clone(r.Labels)
		in.PostRenderer = r.PostRenderer
		in.Force = r.Force
		in.TakeOwnership = r.TakeOwnership
		in.Timeout = r.timeout()
		in.Wait, in.WaitForJobs, in.Atomic = r.Wait, r.WaitForJobs, r.Atomic
		in.Description = r.Description
		rel, err := in.RunWithContext(opCtx, r.Chart, r.values())
		if err != nil {
			return ApplyResult{}, c.errorf(r.Namespace, r.Name, "install", err)
		}
		res := ApplyResult{Revision: rel.Version, Action: "install"}
		c.log.Info("installed release", zap.String("namespace", r.Namespace), zap.String("release", r.Name), zap.Int("revision", rel.Version))
		return res, nil
	})
}

// Upgrade writes a new revision of an existing release. Values replace the previous ones entirely
// (ResetValues): the request is the whole desired state. A release stuck in pending-* is refused by Helm
// with "another operation (install/upgrade/rollback) is in progress"; DiscardPending it first.
func (c *Client) Upgrade(ctx context.Context, r ApplyRequest) (ApplyResult, error) {
	if err := r.check(); err != nil {
		return ApplyResult{}, c.errorf(r.Namespace, r.Name, "upgrade", err)
	}
	return exclusive(ctx, c, r.Namespace, r.Name, "upgrade", func() (ApplyResult, error) {
		opCtx := context.WithoutCancel(ctx)
		cfg, err := c.actionConfig(opCtx, r.Namespace, r.Name)
		if err != nil {
			return ApplyResult{}, c.errorf(r.Namespace, r.Name, "upgrade", err)
		}
		c.serverSideValidation(opCtx, cfg)
		if err := confine(cfg, r.ConfineToNamespace); err != nil {
			return ApplyResult{}, c.errorf(r.Namespace, r.Name, "upgrade", err)
		}
		labels, err := replacingLabels(cfg, r.Name, r.Labels)
		if err != nil {
			return ApplyResult{}, c.errorf(r.Namespace, r.Name, "upgrade", err)
		}
		if err := c.ensureNamespaceMetadata(ctx, r.Namespace, r.NamespaceLabels, r.NamespaceAnnotations); err != nil {
			return ApplyResult{}, c.errorf(r.Namespace, r.Name, "upgrade", fmt.Errorf("namespaceLabels/namespaceAnnotations: %w", err))
		}
		up := action.NewUpgrade(cfg)
		up.Namespace = r.Namespace
		up.Labels = labels
		up.ResetValues = true
		up.PostRenderer = r.PostRenderer
		up.MaxHistory = orDefault(r.MaxHistory, DefaultMaxHistory)
		up.Force = r.Force
		up.TakeOwnership = r.TakeOwnership
		up.Timeout = r.timeout()
		up.Wait, up.WaitForJobs, up.Atomic = r.Wait, r.WaitForJobs, r.Atomic
		up.Description = r.Description
		rel, err := up.RunWithContext(opCtx, r.Name, r.Chart, r.values())
		if err != nil {
			return ApplyResult{}, c.errorf(r.Namespace, r.Name, "upgrade", err)
		}
		res := ApplyResult{Revision: rel.Version, Action: "upgrade"}
		c.log.Info("upgraded release", zap.String("namespace", r.Namespace), zap.String("release", r.Name), zap.Int("revision", rel.Version))
		return res, nil
	})
}

// replacingLabels turns labels into Helm's merge syntax so the new revision carries exactly labels:
// Helm merges the previous revision's labels with the new ones and drops those set to "null".
func replacingLabels(cfg *action.Configuration, name string, labels map[string]string) (map[string]string, error) {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	last, err := cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return out, nil // Helm reports the missing release itself
	}
	if err != nil {
		return nil, err
	}
	for k := range customLabels(last.Labels) {
		if _, keep := out[k]; !keep {
			out[k] = "null"
		}
	}
	return out, nil
}

// Rollback writes a new revision with the manifest of revision (0: the latest revision), for drift
// correction: objects deleted since are recreated and changed fields reverted by a three-way merge of
// old manifest, new manifest and live object (Helm 3 never uses server-side apply). For custom resources
// the merge is the three-way JSON merge kubectl apply uses, so their drift is reverted too. Force
// replaces objects whose changes cannot be patched. maxHistory 0 ⇒ DefaultMaxHistory. It returns the
// new revision.
func (c *Client) Rollback(ctx context.Context, r RollbackRequest) (int, error) {
	namespace, name := r.Namespace, r.Name
	return exclusive(ctx, c, namespace, name, "rollback", func() (int, error) {
		opCtx := context.WithoutCancel(ctx)
		cfg, err := c.actionConfig(opCtx, namespace, name)
		if err != nil {
			return 0, c.errorf(namespace, name, "rollback", err)
		}
		if k := kubeOf(cfg); k != nil {
			k.threeWay = true
		}
		current, err := cfg.Releases.Last(name)
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return 0, c.errorf(namespace, name, "rollback", ErrReleaseNotFound)
		}
		if err != nil {
			return 0, c.errorf(namespace, name, "rollback", err)
		}
		target := r.Revision
		if target == 0 {
			target = current.Version
		}
		rb := action.NewRollback(cfg)
		rb.Version = target
		rb.Force = r.Force
		rb.MaxHistory = orDefault(r.MaxHistory, DefaultMaxHistory)
		rb.Timeout = DefaultTimeout
		if err := rb.Run(name); err != nil {
			if !r.KeepFailHistory {
				c.forgetFailedRollback(cfg, current)
			}
			return 0, c.errorf(namespace, name, fmt.Sprintf("rollback to revision %d", target), err)
		}
		last, err := cfg.Releases.Last(name)
		if err != nil {
			return 0, c.errorf(namespace, name, "rollback", err)
		}
		c.log.Info("rolled back release", zap.String("namespace", namespace), zap.String("release", name),
			zap.Int("toRevision", target), zap.Int("revision", last.Version))
		return last.Version, nil
	})
}

// forgetFailedRollback removes the failed revision a rollback recorded and marks the revision that was
// current deployed again, as Fleet does without keepFailHistory: a drift correction that keeps failing
// must not fill the history with failures or push good revisions out of it. Best effort: the error that
// matters is the rollback's.
func (c *Client) forgetFailedRollback(cfg *action.Configuration, current *release.Release) {
	failed, err := cfg.Releases.Last(current.Name)
	if err != nil || failed.Version != current.Version+1 {
		return
	}
	if _, err := cfg.Releases.Delete(failed.Name, failed.Version); err != nil {
		c.log.Warn("could not remove failed rollback revision", zap.String("release", current.Name), zap.Error(err))
		return
	}
	current.Info.Status = release.StatusDeployed
	if err := cfg.Releases.Update(current); err != nil {
		c.log.Warn("could not restore release status after failed rollback", zap.String("release", current.Name), zap.Error(err))
	}
}

// Uninstall removes a release. With keepResources only Helm's record (the release Secrets) is deleted
// and the objects stay, unowned, as Fleet's keepResources does. A missing release is not an error.
func (c *Client) Uninstall(ctx context.Context, namespace, name string, keepResources bool) error {
	_, err := exclusive(ctx, c, namespace, name, "uninstall", func() (struct{}, error) {
		opCtx := context.WithoutCancel(ctx)
		cfg, err := c.actionConfig(opCtx, namespace, name)
		if err != nil {
			return struct{}{}, c.errorf(namespace, name, "uninstall", err)
		}
		if keepResources {
			rels, err := cfg.Releases.History(name)
			if errors.Is(err, driver.ErrReleaseNotFound) {
				return struct{}{}, nil
			}
			if err != nil {
				return struct{}{}, c.errorf(namespace, name, "uninstall", err)
			}
			for _, r := range rels {
				if _, err := cfg.Releases.Delete(r.Name, r.Version); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
					return struct{}{}, c.errorf(namespace, name, fmt.Sprintf("uninstall: deleting revision %d", r.Version), err)
				}
			}
			c.log.Info("forgot release, kept its objects", zap.String("namespace", namespace), zap.String("release", name))
			return struct{}{}, nil
		}
		un := action.NewUninstall(cfg)
		un.IgnoreNotFound = true
		un.Timeout = DefaultTimeout
		if _, err := un.Run(name); err != nil {
			return struct{}{}, c.errorf(namespace, name, "uninstall", err)
		}
		c.log.Info("uninstalled release", zap.String("namespace", namespace), zap.String("release", name))
		return struct{}{}, nil
	})
	return err
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}
