package agentclient

import (
	"context"
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podSecurityPrefix marks the Pod Security admission labels, which Fleet leaves to the cluster's
// administrator: a bundle's namespaceLabels cannot loosen the security of the namespace it lands in.
const podSecurityPrefix = "pod-security.kubernetes.io/"

// ensureNamespaceMetadata gives the release namespace the bundle's namespaceLabels and
// namespaceAnnotations before Helm applies anything, creating the namespace when missing, so the
// release's objects are created in a namespace that already carries them (an admission webhook or a
// network policy selecting by namespace label sees them from the first Pod on). Keys not named stay as
// they are. Nothing is written when nothing differs.
func (c *Client) ensureNamespaceMetadata(ctx context.Context, namespace string, labels, annotations map[string]string) error {
	labels = withoutPodSecurity(labels)
	if len(labels) == 0 && len(annotations) == 0 {
		return nil
	}
	nss := c.clientset.CoreV1().Namespaces()
	ns, err := nss.Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: labels, Annotations: annotations}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		ns, err = nss.Get(ctx, namespace, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	if contains(ns.Labels, labels) && contains(ns.Annotations, annotations) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}})
	if err != nil {
		return err
	}
	_, err = nss.Patch(ctx, namespace, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func withoutPodSecurity(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if !strings.HasPrefix(k, podSecurityPrefix) {
			out[k] = v
		}
	}
	return out
}

func contains(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
