package agentclient

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/client-go/rest"
)

// confineLookups limits what a chart's `lookup` can read to namespace ns. Helm builds the lookup client
// from the action configuration's REST config, with the worker's identity: on an API server shared by
// confined clusters a chart could otherwise read every tenant's Secrets. Outside ns a lookup finds
// nothing, as under `helm template` (Argo CD's behaviour for every lookup). Helm's kube client keeps its
// own REST config and is not affected.
func confineLookups(cfg *action.Configuration, ns string) {
	cfg.RESTClientGetter = lookupGetter{RESTClientGetter: cfg.RESTClientGetter, namespace: ns}
}

type lookupGetter struct {
	action.RESTClientGetter
	namespace string
}

func (g lookupGetter) ToRESTConfig() (*rest.Config, error) {
	cfg, err := g.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return namespaceOnly{next: rt, namespace: g.namespace} })
	return cfg, nil
}

// LookupsConfinedTo wraps a transport so that only discovery and reads inside namespace ns pass, as the
// lookups of a confined release do; the chart render check (internal/chartcheck) uses it so its lookups
// find exactly what the install's will.
func LookupsConfinedTo(next http.RoundTripper, ns string) http.RoundTripper {
	return namespaceOnly{next: next, namespace: ns}
}

// namespaceOnly passes discovery and reads inside one namespace; anything else is answered 404.
type namespaceOnly struct {
	next      http.RoundTripper
	namespace string
}

func (t namespaceOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && allowedLookupPath(req.URL.Path, t.namespace) {
		return t.next.RoundTrip(req)
	}
	body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,`+
		`"message":"outside namespace %s"}`, t.namespace)
	return &http.Response{
		StatusCode: http.StatusNotFound, Status: "404 Not Found", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}},
		Body:   io.NopCloser(bytes.NewBufferString(body)), ContentLength: int64(len(body)), Request: req,
	}, nil
}

// allowedLookupPath is discovery (/api, /api/v1, /apis, /apis/G, /apis/G/V) or a path inside namespace ns
// (/api/v1/namespaces/ns[/...], /apis/G/V/namespaces/ns[/...]).
func allowedLookupPath(p, ns string) bool {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 1 && parts[0] == "api":
		if len(parts) <= 2 {
			return true
		}
		rest = parts[2:]
	case len(parts) >= 1 && parts[0] == "apis":
		if len(parts) <= 3 {
			return true
		}
		rest = parts[3:]
	default:
		return false
	}
	return len(rest) >= 2 && rest[0] == "namespaces" && rest[1] == ns
}
