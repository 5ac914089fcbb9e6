package agentclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	pkgerrors "github.com/pkg/errors"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestErrorClassification(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/version", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	cases := []struct {
		name                 string
		err                  error
		unreachable, invalid bool
	}{
		{"connection refused", refused, true, false},
		{"refused, wrapped by Helm", pkgerrors.Wrap(refused, "Kubernetes cluster unreachable"), true, false},
		{"deadline", fmt.Errorf("install: %w", context.DeadlineExceeded), true, false},
		{"cancelled is not the cluster's fault", context.Canceled, false, false},
		{"503 from a proxy", apierrors.NewGenericServerResponse(503, "get", gr, "web", "upstream down", 0, true), true, false},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true, false},
		{"flattened by Helm", errors.New(`cannot patch "web" with kind Deployment: Get "https://x": dial tcp 127.0.0.1:6443: connect: connection refused`), true, false},
		{"tls", errors.New("tls: failed to verify certificate: x509: certificate signed by unknown authority"), true, false},
		{"422", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", nil), false, true},
		{"400", apierrors.NewBadRequest("bad"), false, true},
		{"unknown kind", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "x.io", Kind: "Widget"}}, false, true},
		{"immutable field, flattened", errors.New(`cannot patch "web" with kind Deployment: Deployment.apps "web" is invalid: spec.selector: Invalid value: {}: field is immutable`), false, true},
		{"unknown kind, from Helm's build", errors.New(`unable to build kubernetes objects from release manifest: resource mapping not found for name: "w" namespace: "" from "": no matches for kind "Widget" in version "x.io/v1"`), false, true},
		{"forbidden is neither", apierrors.NewForbidden(gr, "web", errors.New("rbac")), false, false},
		{"conflict is neither", apierrors.NewConflict(gr, "web", errors.New("changed")), false, false},
		{"nil", nil, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.unreachable, IsUnreachable(tc.err), "IsUnreachable")
			require.Equal(t, tc.invalid, IsInvalid(tc.err), "IsInvalid")
		})
	}
}
