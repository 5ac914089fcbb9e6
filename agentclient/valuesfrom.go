package agentclient

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrValuesNotFound is a valuesFrom ConfigMap or Secret, or its key, that the cluster does not have.
var ErrValuesNotFound = errors.New("not found")

// ValuesKey is one key of a ConfigMap's or Secret's data, as a bundle's helm.valuesFrom names it.
type ValuesKey struct {
	Secret               bool
	Namespace, Name, Key string
}

// ReadValues reads a key of a ConfigMap's data or a Secret's data, as Fleet's agent does for valuesFrom,
// and the object's UID. A missing object or key wraps ErrValuesNotFound. No error carries any of the
// object's content, and nothing of it is logged.
func (c *Client) ReadValues(ctx context.Context, k ValuesKey) (data []byte, uid string, err error) {
	var ok bool
	if k.Secret {
		s, err := c.clientset.CoreV1().Secrets(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", valuesReadError(err)
		}
		data, ok = s.Data[k.Key]
		uid = string(s.UID)
	} else {
		cm, err := c.clientset.CoreV1().ConfigMaps(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", valuesReadError(err)
		}
		var s string
		s, ok = cm.Data[k.Key]
		data, uid = []byte(s), string(cm.UID)
	}
	if !ok {
		kind := "configmap"
		if k.Secret {
			kind = "secret"
		}
		return nil, "", fmt.Errorf("%w (the %s has no such key)", ErrValuesNotFound, kind)
	}
	return data, uid, nil
}

func valuesReadError(err error) error {
	if apierrors.IsNotFound(err) {
		return ErrValuesNotFound
	}
	return err
}
