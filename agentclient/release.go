package agentclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flotilla-gitops/flotilla/api"
)

// ReleaseState is what Helm's storage says about one release revision.
type ReleaseState struct {
	Exists          bool
	Name, Namespace string
	// Status is Helm's release.Status string: deployed, failed, pending-install, pending-upgrade,
	// pending-rollback, uninstalling, uninstalled, superseded, unknown.
	Status   string
	Revision int
	// Labels are the release's custom labels (Helm 3.13+), stored on the storage Secret; Helm's own
	// bookkeeping labels (name, owner, status, version, createdAt, modifiedAt) are left out.
	Labels       map[string]string
	DeploymentID string // Labels[api.LabelDeploymentID]
	Description  string
	Updated      time.Time
}

// Pending reports whether the revision is locked by an operation in progress (or by one that died).
func (s ReleaseState) Pending() bool {
	return s.Exists && release.Status(s.Status).IsPending()
}

func stateOf(r *release.Release) ReleaseState {
	s := ReleaseState{Exists: true, Name: r.Name, Namespace: r.Namespace, Revision: r.Version, Labels: customLabels(r.Labels)}
	s.DeploymentID = s.Labels[api.LabelDeploymentID]
	if r.Info != nil {
		s.Status = r.Info.Status.String()
		s.Description = r.Info.Description
		s.Updated = r.Info.LastDeployed.Time
	}
	return s
}

// customLabels drops Helm's bookkeeping labels; its Secret driver returns them mixed in from List and
// Query (Helm's Get filters them).
func customLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		if !slices.Contains(driver.GetSystemLabels(), k) {
			out[k] = v
		}
	}
	return out
}

// Observe reads the latest revision of a release from Helm's storage. A release that does not exist
// yields Exists=false and no error.
func (c *Client) Observe(ctx context.Context, namespace, name string) (ReleaseState, error) {
	rel, err := c.storage(ctx, namespace, c.helmLog(namespace, name)).Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return ReleaseState{Name: name, Namespace: namespace}, nil
	}
	if err != nil {
		return ReleaseState{}, c.errorf(namespace, name, "observe", err)
	}
	return stateOf(rel), nil
}

// History lists every stored revision of a release, oldest first; empty when the release does not exist.
func (c *Client) History(ctx context.Context, namespace, name string) ([]ReleaseState, error) {
	rels, err := c.storage(ctx, namespace, c.helmLog(namespace, name)).History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, c.errorf(namespace, name, "history", err)
	}
	releaseutil.SortByRevision(rels)
	out := make([]ReleaseState, len(rels))
	for i, r := range rels {
		out[i] = stateOf(r)
	}
	return out, nil
}

var secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// ListReleases returns the latest revision of every release, in all namespaces, whose latest revision
// carries all of labelSelector's labels (nil: every release), sorted by namespace and name.
//
// Two LIST calls: Secret metadata of all Helm revisions (to know each release's latest revision without
// decoding anything), then the full Secrets matching the selector.
func (c *Client) ListReleases(ctx context.Context, labelSelector map[string]string) ([]ReleaseState, error) {
	return c.ListReleasesIn(ctx, metav1.NamespaceAll, labelSelector)
}

// ListReleasesIn is ListReleases within one namespace ("" for all): on an API server shared by clusters
// confined to namespaces, listing only the cluster's own namespace keeps the cost that cluster's.
func (c *Client) ListReleasesIn(ctx context.Context, namespace string, labelSelector map[string]string) ([]ReleaseState, error) {
	fail := func(err error) ([]ReleaseState, error) {
		return nil, fmt.Errorf("cluster %s: list releases: %w", c.name, err)
	}
	type key struct{ namespace, name string }
	latest := map[key]int{}
	opts := metav1.ListOptions{LabelSelector: "owner=helm", Limit: listPageSize}
	for {
		page, err := c.metadata.Resource(secretsResource).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return fail(err)
		}
		for _, item := range page.Items {
			v, err := strconv.Atoi(item.Labels["version"])
			if err != nil {
				continue
			}
			k := key{item.Namespace, item.Labels["name"]}
			latest[k] = max(latest[k], v)
		}
		if opts.Continue = page.Continue; opts.Continue == "" {
			break
		}
	}
	if len(latest) == 0 {
		return nil, nil
	}

	selector := maps.Clone(labelSelector)
	if selector == nil {
		selector = map[string]string{}
	}
	selector["owner"] = "helm"
	// Validate here so a bad selector is reported as such, not as Helm's generic query error.
	if _, err := labels.ValidatedSelectorFromSet(selector); err != nil {
		return fail(fmt.Errorf("label selector: %w", err))
	}
	d := driver.NewSecrets(ctxSecrets{SecretInterface: c.clientset.CoreV1().Secrets(namespace), ctx: ctx})
	rels, err := d.Query(selector)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return fail(err)
	}
	found := map[key]*release.Release{}
	for _, r := range rels {
		k := key{r.Namespace, r.Name}
		// ">=": a revision written between the two LISTs is newer than what the first one saw.
		if r.Version >= latest[k] && (found[k] == nil || r.Version > found[k].Version) {
			found[k] = r
		}
	}
	out := make([]ReleaseState, 0, len(found))
	for _, r := range found {
		out = append(out, stateOf(r))
	}
	slices.SortFunc(out, func(a, b ReleaseState) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}

// DiscardPending deletes the latest revision of a release when it is pending-install, pending-upgrade or
// pending-rollback (left by a process killed mid-operation), so the previous revision is the latest
// again and the next Install or Upgrade reuses the revision number (ADR 2: revisions never outnumber
// the changes applied). A discarded pending-install leaves no release at all. The previous revision keeps
// its status (superseded if the process died between Helm's last two writes; Upgrade accepts that).
// Objects the dead operation already applied stay; the next apply reconciles them. It waits for any operation on the release in
// this process, so it never discards a live one here. No-op for any other state or a missing release.
func (c *Client) DiscardPending(ctx context.Context, namespace, name string) error {
	_, err := exclusive(ctx, c, namespace, name, "discard pending revision", func() (struct{}, error) {
		store := c.storage(ctx, namespace, c.helmLog(namespace, name))
		rel, err := store.Last(name)
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return struct{}{}, nil
		}
		if err != nil {
			return struct{}{}, c.errorf(namespace, name, "discard pending revision", err)
		}
		status := rel.Info.Status
		if !status.IsPending() {
			return struct{}{}, nil
		}
		if _, err := store.Delete(name, rel.Version); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			return struct{}{}, c.errorf(namespace, name, fmt.Sprintf("discard pending revision %d", rel.Version), err)
		}
		c.log.Info("discarded pending release revision", zap.String("namespace", namespace), zap.String("release", name),
			zap.Int("revision", rel.Version), zap.String("status", status.String()))
		return struct{}{}, nil
	})
	return err
}

// DeleteNamespace deletes a namespace, and with it every object left in it; one already gone is no error.
// The API server marks it Terminating and its namespace controller empties and removes it.
func (c *Client) DeleteNamespace(ctx context.Context, name string) error {
	err := c.clientset.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cluster %s: delete namespace %s: %w", c.name, name, err)
	}
	return nil
}
