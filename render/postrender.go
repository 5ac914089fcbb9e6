package render

import (
	"bytes"
	"fmt"
	"strings"

	goyaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// clusterScoped are well-known kinds that cannot live in a namespace; a forced namespace refuses them.
var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"PersistentVolume": true, "StorageClass": true, "PriorityClass": true, "IngressClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "APIService": true,
	"RuntimeClass": true, "CSIDriver": true, "CSINode": true, "Node": true, "VolumeAttachment": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true, "PodSecurityPolicy": true,
}

// postRenderer runs a chart's output through its bundle's kustomize.dir, appends the bundle's raw
// manifests and kustomize output to Helm's output, labels every object with its bundle and GitRepo, and
// enforces a forced namespace.
type postRenderer struct {
	extra          []byte
	forceNamespace string
	labels         map[string]string
	// keepCRDs marks every CustomResourceDefinition `helm.sh/resource-policy: keep`, as Fleet does unless
	// deleteCRDResources: uninstalling a bundle must not delete every custom resource of its kinds.
	keepCRDs bool
	// kustomize, when set, is the kustomize.dir of a bundle with a chart: the chart's output goes through it.
	kustomize *chartKustomization
}

// chartKustomization is a kustomize.dir to build a chart's output with, in the repository checkout root.
type chartKustomization struct {
	root, dir string
}

const resourcePolicyKeep = "helm.sh/resource-policy"

// Run implements helm's postrender.PostRenderer.
func (p *postRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	var in bytes.Buffer
	if rendered != nil {
		in.Write(rendered.Bytes())
	}
	if p.kustomize != nil {
		// First, as in Fleet: the kustomization sees the chart's objects as the chart made them.
		built, err := kustomizeOver(p.kustomize.root, p.kustomize.dir, in.Bytes())
		if err != nil {
			return nil, err
		}
		in.Reset()
		in.Write(built)
	}
	in.WriteString("\n---\n")
	in.Write(p.extra)
	dec := goyaml.NewDecoder(bytes.NewReader(in.Bytes()))
	var objs []map[string]any
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, fmt.Errorf("post-render: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		objs = append(objs, flatten(obj)...)
	}
	var out bytes.Buffer
	for _, obj := range objs {
		if obj == nil || obj["kind"] == nil {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			obj["metadata"] = meta
		}
		kind, _ := obj["kind"].(string)
		if p.forceNamespace != "" {
			if clusterScoped[kind] {
				return nil, fmt.Errorf("%s %v is cluster-scoped and cannot be deployed with a forced namespace %q", strings.ToLower(kind), meta["name"], p.forceNamespace)
			}
			meta["namespace"] = p.forceNamespace
		}
		if p.keepCRDs && kind == "CustomResourceDefinition" {
			annotations, _ := meta["annotations"].(map[string]any)
			if annotations == nil {
				annotations = map[string]any{}
			}
			if _, set := annotations[resourcePolicyKeep]; !set {
				annotations[resourcePolicyKeep] = "keep"
			}
			meta["annotations"] = annotations
		}
		if len(p.labels) > 0 {
			labels, _ := meta["labels"].(map[string]any)
			if labels == nil {
				labels = map[string]any{}
			}
			for k, v := range p.labels {
				labels[k] = v
			}
			meta["labels"] = labels
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return &out, nil
}

// flatten returns a List's items (Helm's kube client creates them one by one, so the forced namespace and
// the labels must reach each of them), or the object itself.
func flatten(obj map[string]any) []map[string]any {
	kind, _ := obj["kind"].(string)
	items, isList := obj["items"].([]any)
	if !isList || !strings.HasSuffix(kind, "List") {
		return []map[string]any{obj}
	}
	var out []map[string]any
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, flatten(m)...)
		}
	}
	return out
}
