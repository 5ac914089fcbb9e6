package frontdoor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentkeeper"
	"github.com/flotilla-gitops/flotilla/internal/fleetcrd"
	"github.com/flotilla-gitops/flotilla/internal/gitrepoctl"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// InventoryStatus is a Cluster's or ClusterGroup's status: whether the inventory took it.
type InventoryStatus struct {
	ObservedGeneration int64       `json:"observedGeneration"`
	Conditions         []Condition `json:"conditions"`
}

// InventoryReconciler registers Cluster (or ClusterGroup) objects in the inventory, as `flotilla apply`
// does, and lets a Cluster go as `flotilla cluster remove` does: uninstalled first, then forgotten.
type InventoryReconciler struct {
	Config
	Kind fleetcrd.Kind
}

func (r *InventoryReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := newObject(r.Kind)
	if err := r.Kube.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	meta := fleet.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(), Labels: obj.GetLabels(), Annotations: inventoryAnnotations(obj)}
	if obj.GetDeletionTimestamp() != nil {
		if !controllerutil.ContainsFinalizer(obj, Finalizer) {
			return reconcile.Result{}, nil
		}
		update, arg := api.UpdateRemoveClusterGroup, any(inventory.RemoveInput{Name: meta.Name, Namespace: meta.Namespace, ManagedBy: inventory.ManagedByController})
		if r.Kind == fleetcrd.Cluster {
			update, arg = api.UpdateLeaveCluster, inventory.LeaveInput{Name: meta.Name, Namespace: meta.Namespace, ManagedBy: inventory.ManagedByController}
		}
		// A cluster the inventory does not have, or one the CLI registered, is not the object's to remove.
		if _, err := gitrepoctl.UpdateInventory(ctx, r.Temporal, r.TaskQueue, update, arg); err != nil && !refused(err) {
			return reconcile.Result{}, fmt.Errorf("%s %s/%s: %w", r.Kind.Kind, meta.Namespace, meta.Name, err)
		}
		controllerutil.RemoveFinalizer(obj, Finalizer)
		if err := r.Kube.Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil
	}
	if controllerutil.AddFinalizer(obj, Finalizer) {
		if err := r.Kube.Update(ctx, obj); err != nil {
			return reconcile.Result{}, err
		}
	}
	update, arg, err := r.entry(obj, meta)
	if err == nil {
		if _, err = gitrepoctl.UpdateInventory(ctx, r.Temporal, r.TaskQueue, update, arg); err != nil && !refused(err) {
			return reconcile.Result{}, fmt.Errorf("%s %s/%s: %w", r.Kind.Kind, meta.Namespace, meta.Name, err)
		}
	}
	if c, ok := arg.(fleet.Cluster); ok && err == nil {
		// As `flotilla cluster add` does: the cluster's AgentWorkflow applies a changed agent setting now,
		// and ends for a cluster that left agent mode.
		keep := agentkeeper.Check
		if c.Spec.Agent != nil {
			keep = agentkeeper.Ensure
		}
		if err := keep(ctx, r.Temporal, r.TaskQueue, fleet.Workspace(meta.Namespace), meta.Name); err != nil {
			return reconcile.Result{}, fmt.Errorf("%s %s/%s: keeping its agent: %w", r.Kind.Kind, meta.Namespace, meta.Name, err)
		}
	}
	old := oldStatus(obj)
	st := InventoryStatus{ObservedGeneration: obj.GetGeneration()}
	if err != nil {
		// An update the inventory refuses is the object's fault: say so and wait for the object to change.
		r.Log.Info("inventory refused", zap.String("kind", r.Kind.Kind), zap.String("name", meta.Namespace+"/"+meta.Name), zap.Error(err))
		st.Conditions = mergeConditions(old.Conditions, r.now(), Condition{Type: "Ready", Status: "False", Reason: "Refused", Message: err.Error()})
	} else {
		st.Conditions = mergeConditions(old.Conditions, r.now(), Condition{Type: "Ready", Status: "True", Reason: "Registered"})
	}
	return reconcile.Result{}, writeStatus(ctx, r.Kube, obj, st)
}

func (r *InventoryReconciler) entry(obj *unstructured.Unstructured, meta fleet.ObjectMeta) (string, any, error) {
	spec, err := json.Marshal(obj.Object["spec"])
	if err != nil {
		return "", nil, err
	}
	if r.Kind == fleetcrd.ClusterGroup {
		g := fleet.ClusterGroup{APIVersion: fleet.APIVersion, Kind: fleet.KindClusterGroup, Metadata: meta}
		if err := yaml.UnmarshalStrict(spec, &g.Spec); err != nil {
			return "", nil, fmt.Errorf("spec: %w", err)
		}
		return api.UpdateUpsertClusterGroup, g, nil
	}
	c := fleet.Cluster{APIVersion: fleet.APIVersion, Kind: fleet.KindCluster, Metadata: meta}
	if err := yaml.UnmarshalStrict(spec, &c.Spec); err != nil {
		return "", nil, fmt.Errorf("spec: %w", err)
	}
	if c.Spec.KubeConfigPath != "" {
		// A path names a file on the worker's host: whoever may create a Cluster object would choose which.
		return "", nil, fmt.Errorf("spec.kubeConfigPath: a Cluster object names its kubeconfig with spec.kubeConfigSecret, " +
			"a Secret of its own namespace, not a file on the worker's host")
	}
	if err := inventory.ValidateCluster(c); err != nil {
		return "", nil, err
	}
	return api.UpdateUpsertCluster, c, nil
}

// inventoryAnnotations are the annotations the inventory keeps: the object's, but kubectl's
// last-applied configuration (which would copy the whole object into Temporal), and who registered it.
func inventoryAnnotations(obj *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		if k != "kubectl.kubernetes.io/last-applied-configuration" {
			out[k] = v
		}
	}
	out[inventory.AnnotationManagedBy] = inventory.ManagedByController
	return out
}

// refused is an update the inventory's validator turned down: the object's fault, not worth retrying.
func refused(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app)
}
