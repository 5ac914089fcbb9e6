// Package frontdoor is flotilla-controller's reconcilers: Fleet's GitRepo, HelmOp, Cluster and ClusterGroup
// objects in a management cluster drive the same workflows and inventory updates `flotilla apply` does
// (through gitrepoctl), and each GitRepo's and HelmOp's status is written back in Fleet's shape (ADR 38).
package frontdoor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	tclient "go.temporal.io/sdk/client"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/fleetcrd"
	"github.com/flotilla-gitops/flotilla/internal/gitrepoctl"
)

// Finalizer holds a GitRepo, HelmOp or Cluster object until what it deployed is uninstalled.
const Finalizer = "fleet.cattle.io/flotilla"

// Intervals of the status read-back: a GitRepo on its way is read often, a settled one seldom. A status is
// written only when it changed, so these bound the writes per object, not their number.
const (
	StatusEvery        = 2 * time.Second
	SettledStatusEvery = 15 * time.Second
)

// Config is what every reconciler shares.
type Config struct {
	Kube      client.Client
	Temporal  tclient.Client
	TaskQueue string
	Log       *zap.Logger
	// Now is the clock of condition times (tests fix it).
	Now func() time.Time
}

func (c Config) now() string { return c.Now().UTC().Format(time.RFC3339) }

// GVK is the group, version and kind of k.
func GVK(k fleetcrd.Kind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: fleetcrd.Group, Version: fleetcrd.Version, Kind: k.Kind}
}

func newObject(k fleetcrd.Kind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK(k))
	return u
}

// GitRepoReconciler runs GitRepo (or HelmOp) objects as GitRepo workflows.
type GitRepoReconciler struct {
	Config
	Kind fleetcrd.Kind
	// deleting are the objects (by UID) whose workflow was sent its delete signal: once per object and
	// process, since the workflow takes the signal once and a second would only grow its history.
	deleting sync.Map
}

func (r *GitRepoReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := newObject(r.Kind)
	if err := r.Kube.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	key := api.KeyOf(obj.GetNamespace(), obj.GetName())
	if obj.GetDeletionTimestamp() != nil {
		return r.delete(ctx, obj, key)
	}
	if controllerutil.AddFinalizer(obj, Finalizer) {
		if err := r.Kube.Update(ctx, obj); err != nil {
			return reconcile.Result{}, err
		}
	}
	old := oldStatus(obj)
	gr, err := r.gitRepo(ctx, obj)
	var transient retry
	if errors.As(err, &transient) {
		return reconcile.Result{}, transient.error
	}
	if err != nil {
		return reconcile.Result{}, r.writeStatus(ctx, obj, Refused(obj.GetGeneration(), "Refused", err.Error(), old.Conditions, r.now()))
	}
	info, err := gitrepoctl.LatestRun(ctx, r.Temporal, key)
	if err != nil {
		return reconcile.Result{}, err
	}
	running := info != nil && info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	// The spec is handed over once per generation, and again only when the workflow has ended behind the
	// object's back, or when that generation was refused (a restriction since lifted): a restarted
	// controller or a lost watch re-reads the object without signalling anything.
	if !running || old.ObservedGeneration != obj.GetGeneration() || conditionStatus(old.Conditions, "Accepted") != "True" {
		if _, err := gitrepoctl.Apply(ctx, r.Temporal, r.TaskQueue, gr, api.ManagedByController); err != nil {
			var elsewhere *gitrepoctl.ManagedElsewhereError
			var other *gitrepoctl.OtherInstallationError
			var taken *gitrepoctl.NameTakenError
			if errors.As(err, &elsewhere) || errors.As(err, &other) || errors.As(err, &taken) || isInvalid(err) {
				return reconcile.Result{}, r.writeStatus(ctx, obj, Refused(obj.GetGeneration(), "Refused", err.Error(), old.Conditions, r.now()))
			}
			return reconcile.Result{}, err
		}
		r.Log.Info("gitrepo handed over", zap.String("kind", r.Kind.Kind), zap.String("gitrepo", key.String()), zap.Int64("generation", obj.GetGeneration()))
	}
	var st api.GitRepoStatus
	v, err := r.Temporal.QueryWorkflow(ctx, key.WorkflowID(), "", api.QueryStatus)
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		// A workflow just started may not answer yet; its status comes at the next read.
		r.Log.Debug("status query failed", zap.String("gitrepo", key.String()), zap.Error(err))
		return reconcile.Result{RequeueAfter: StatusEvery}, nil
	}
	next := FromGitRepo(st, obj.GetGeneration(), old.Conditions, r.now())
	if err := r.writeStatus(ctx, obj, next); err != nil {
		return reconcile.Result{}, err
	}
	if conditionStatus(next.Conditions, "Ready") == "True" {
		return reconcile.Result{RequeueAfter: SettledStatusEvery}, nil
	}
	return reconcile.Result{RequeueAfter: StatusEvery}, nil
}

func conditionStatus(cs []Condition, typ string) string {
	for _, c := range cs {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// retry is a failure to read what admitting a GitRepo needs: tried again, never written as a refusal.
type retry struct{ error }

// invalid is a spec Flotilla refuses (ValidateGitRepo): not worth retrying until the object changes.
type invalid struct{ error }

func isInvalid(err error) bool {
	var i invalid
	return errors.As(err, &i)
}

// gitRepo is the object as the GitRepo `flotilla apply` would run, with its namespace's restrictions
// applied; an error is a refusal to write in its status.
func (r *GitRepoReconciler) gitRepo(ctx context.Context, obj *unstructured.Unstructured) (fleet.GitRepo, error) {
	spec, err := json.Marshal(obj.Object["spec"])
	if err != nil {
		return fleet.GitRepo{}, err
	}
	meta := fleet.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(), Labels: obj.GetLabels()}
	var gr fleet.GitRepo
	if r.Kind == fleetcrd.HelmOp {
		h := fleet.HelmOp{APIVersion: fleet.APIVersion, Kind: fleet.KindHelmOp, Metadata: meta}
		if err := yaml.UnmarshalStrict(spec, &h.Spec); err != nil {
			return gr, fmt.Errorf("spec: %w", err)
		}
		if gr, err = h.AsGitRepo(); err != nil {
			return gr, err
		}
	} else {
		gr = fleet.GitRepo{APIVersion: fleet.APIVersion, Kind: fleet.KindGitRepo, Metadata: meta}
		if err := yaml.UnmarshalStrict(spec, &gr.Spec); err != nil {
			return gr, fmt.Errorf("spec: %w", err)
		}
	}
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(GVK(fleetcrd.GitRepoRestriction).GroupVersion().WithKind(fleetcrd.GitRepoRestriction.Kind + "List"))
	if err := r.Kube.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return gr, retry{fmt.Errorf("listing GitRepoRestrictions: %w", err)}
	}
	var restrictions []fleet.GitRepoRestriction
	for _, item := range list.Items {
		data, _ := json.Marshal(item.Object)
		var rs fleet.GitRepoRestriction
		if err := json.Unmarshal(data, &rs); err != nil {
			return gr, fmt.Errorf("GitRepoRestriction %q: %w", item.GetName(), err)
		}
		restrictions = append(restrictions, rs)
	}
	if gr, err = fleet.Admit(gr, restrictions); err != nil {
		return gr, err
	}
	if gr.Spec.ServiceAccount != "" {
		return gr, fmt.Errorf("spec.serviceAccount %q: impersonating a service account is not supported yet; remove it, or give the "+
			"cluster a kubeconfig with only the rights the GitRepo needs", gr.Spec.ServiceAccount)
	}
	if err := fleet.ValidateGitRepo(gr); err != nil {
		return gr, invalid{err}
	}
	return gr, nil
}

// delete uninstalls as `flotilla delete` does and lets the object go once the workflow has ended; a
// GitRepo the controller does not own (never started, another installation's, the CLI's) is left alone.
func (r *GitRepoReconciler) delete(ctx context.Context, obj *unstructured.Unstructured, key api.GitRepoKey) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return reconcile.Result{}, nil
	}
	info, err := gitrepoctl.LatestRun(ctx, r.Temporal, key)
	if err != nil {
		return reconcile.Result{}, err
	}
	if info != nil && info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && info.GetTaskQueue() == r.TaskQueue &&
		gitrepoctl.ManagedBy(info) == api.ManagedByController {
		if _, sent := r.deleting.Load(obj.GetUID()); !sent {
			if err := r.Temporal.SignalWorkflow(ctx, key.WorkflowID(), "", api.SignalDelete, nil); err != nil {
				return reconcile.Result{}, fmt.Errorf("gitrepo %q: delete: %w", key, err)
			}
			r.deleting.Store(obj.GetUID(), true)
			r.Log.Info("gitrepo deleting", zap.String("kind", r.Kind.Kind), zap.String("gitrepo", key.String()))
		}
		return reconcile.Result{RequeueAfter: StatusEvery}, nil
	}
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := r.Kube.Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	r.deleting.Delete(obj.GetUID())
	r.Log.Info("gitrepo deleted", zap.String("kind", r.Kind.Kind), zap.String("gitrepo", key.String()))
	return reconcile.Result{}, nil
}

func oldStatus(obj *unstructured.Unstructured) Status {
	var s Status
	if raw, ok := obj.Object["status"]; ok {
		data, _ := json.Marshal(raw)
		_ = json.Unmarshal(data, &s)
	}
	return s
}

// writeStatus writes s on the status subresource unless it is what the object has.
func (r *GitRepoReconciler) writeStatus(ctx context.Context, obj *unstructured.Unstructured, s Status) error {
	return writeStatus(ctx, r.Kube, obj, s)
}

func writeStatus(ctx context.Context, kube client.Client, obj *unstructured.Unstructured, s any) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var next map[string]any
	if err := json.Unmarshal(data, &next); err != nil {
		return err
	}
	if reflect.DeepEqual(normalize(obj.Object["status"]), next) {
		return nil
	}
	obj.Object["status"] = next
	return kube.Status().Update(ctx, obj)
}

// normalize makes a status read from the API server comparable with one built here (numbers as float64).
func normalize(v any) any {
	data, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}
