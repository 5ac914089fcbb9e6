package agentclient

import (
	"fmt"
	"io"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/resource"
)

// helmKube is Helm's kube client with Flotilla's changes. One type holds them all because Helm asserts its
// KubeClient to *kube.Client's optional interfaces (three-way merge, logs, waits): a wrapper of a wrapper
// would hide them.
type helmKube struct {
	*kube.Client
	// skipValidation builds objects without the client-side schema check the server makes pointless.
	skipValidation bool
	// threeWay makes the plain Update use the three-way merge for unstructured objects as well; with the
	// two-way merge a rollback to the current revision never reverts a changed custom resource.
	threeWay bool
	// confine, when set, is the only namespace objects may be written to (see ConfinementError).
	confine string
}

// kubeOf returns cfg's kube client as a helmKube, wrapping Helm's own the first time.
func kubeOf(cfg *action.Configuration) *helmKube {
	switch k := cfg.KubeClient.(type) {
	case *helmKube:
		return k
	case *kube.Client:
		h := &helmKube{Client: k}
		cfg.KubeClient = h
		return h
	}
	return nil
}

// confine keeps what cfg writes, and what its charts look up, inside namespace ns; "" changes nothing.
func confine(cfg *action.Configuration, ns string) error {
	if ns == "" {
		return nil
	}
	k := kubeOf(cfg)
	if k == nil {
		return fmt.Errorf("cannot confine objects to namespace %q: unexpected Helm kube client %T", ns, cfg.KubeClient)
	}
	k.confine = ns
	confineLookups(cfg, ns)
	return nil
}

func (k *helmKube) Build(r io.Reader, validate bool) (kube.ResourceList, error) {
	return k.Client.Build(r, validate && !k.skipValidation)
}

// Create is every object Helm creates: manifests, hooks (which Helm never post-renders), the CRDs of a
// chart's crds/ folder, the release namespace. Lists are already flattened into their items by Build.
func (k *helmKube) Create(resources kube.ResourceList) (*kube.Result, error) {
	if err := k.confined(resources); err != nil {
		return nil, err
	}
	return k.Client.Create(resources)
}

func (k *helmKube) Update(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	if err := k.confined(target); err != nil {
		return nil, err
	}
	if k.threeWay {
		return k.Client.UpdateThreeWayMerge(original, target, force)
	}
	return k.Client.Update(original, target, force)
}

func (k *helmKube) UpdateThreeWayMerge(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	if err := k.confined(target); err != nil {
		return nil, err
	}
	return k.Client.UpdateThreeWayMerge(original, target, force)
}

// ConfinementError is an object a release may not write: a cluster confined to a namespace shares its API
// server with others, and a bundle with a target namespace promises to stay in it. Scope comes from the
// cluster's own REST mapping, so a cluster-scoped kind no list knows (FlowSchema, a CRD's cluster-scoped
// kind) is refused as well.
type ConfinementError struct {
	Kind, Name, Namespace string
	ClusterScoped         bool
	Confine               string
}

func (e *ConfinementError) Error() string {
	if e.ClusterScoped {
		return fmt.Sprintf("%s %q is cluster-scoped and cannot be deployed: objects must stay in namespace %q", e.Kind, e.Name, e.Confine)
	}
	return fmt.Sprintf("%s %q in namespace %q cannot be deployed: objects must stay in namespace %q", e.Kind, e.Name, e.Namespace, e.Confine)
}

func (k *helmKube) confined(resources kube.ResourceList) error {
	if k.confine == "" {
		return nil
	}
	for _, info := range resources {
		if err := checkConfined(info, k.confine); err != nil {
			return err
		}
	}
	return nil
}

func checkConfined(info *resource.Info, confine string) error {
	kind := ""
	if info.Mapping != nil {
		kind = info.Mapping.GroupVersionKind.Kind
	}
	if info.Mapping == nil || info.Mapping.Scope == nil {
		return &ConfinementError{Kind: kind, Name: info.Name, Namespace: info.Namespace, Confine: confine}
	}
	if info.Mapping.Scope.Name() == meta.RESTScopeNameRoot {
		// The release namespace itself, which Helm creates when it is missing.
		if kind == "Namespace" && info.Mapping.GroupVersionKind.Group == "" && info.Name == confine {
			return nil
		}
		return &ConfinementError{Kind: kind, Name: info.Name, ClusterScoped: true, Confine: confine}
	}
	if info.Namespace != confine {
		return &ConfinementError{Kind: kind, Name: info.Name, Namespace: info.Namespace, Confine: confine}
	}
	return nil
}
