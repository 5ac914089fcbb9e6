package frontdoor

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-gitops/flotilla/internal/fleetcrd"
)

// Setup registers every reconciler with mgr. Status writes do not wake a reconciler (only a new
// generation, labels or annotations do), so a status it wrote is not read back at once; the status
// read-back runs on RequeueAfter.
func Setup(mgr manager.Manager, cfg Config) error {
	changed := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{},
		predicate.AnnotationChangedPredicate{}))
	for _, k := range []fleetcrd.Kind{fleetcrd.GitRepo, fleetcrd.HelmOp} {
		r := &GitRepoReconciler{Config: cfg, Kind: k}
		kind := k
		err := builder.ControllerManagedBy(mgr).Named(strings.ToLower(k.Kind)).For(newObject(k), changed).
			// A restriction changed: every GitRepo (or HelmOp) of its namespace is admitted again.
			Watches(newObject(fleetcrd.GitRepoRestriction), handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
				var list unstructured.UnstructuredList
				list.SetGroupVersionKind(GVK(kind).GroupVersion().WithKind(kind.Kind + "List"))
				if err := cfg.Kube.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
					return nil
				}
				out := make([]reconcile.Request, 0, len(list.Items))
				for _, item := range list.Items {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&item)})
				}
				return out
			})).
			Complete(r)
		if err != nil {
			return err
		}
	}
	for _, k := range []fleetcrd.Kind{fleetcrd.Cluster, fleetcrd.ClusterGroup} {
		r := &InventoryReconciler{Config: cfg, Kind: k}
		if err := builder.ControllerManagedBy(mgr).Named(strings.ToLower(k.Kind)).For(newObject(k), changed).Complete(r); err != nil {
			return err
		}
	}
	return nil
}
