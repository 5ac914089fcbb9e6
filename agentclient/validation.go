package agentclient

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/version"
)

// Helm validates manifests "strictly" through kubectl's ParamVerifyingSchema, which skips client-side
// schema validation whenever the server supports server-side field validation (GA and always on since
// Kubernetes 1.27). Finding that out costs every Install and Upgrade two OpenAPI v3 downloads and the
// parse of the core/v1 document (about 1 MB of JSON), even for the Namespace CreateNamespace makes: on a
// fleet, most of the CPU an install takes. The answer cannot change for a server version, so it is asked
// once per Client, from /version, and Helm's kube client is told not to validate where the validation
// would have been skipped anyway. Older servers keep Helm's client-side validation.
const fieldValidationGAMinor = 27

// serverSideValidation makes cfg skip the client-side validation the server makes pointless.
func (c *Client) serverSideValidation(ctx context.Context, cfg *action.Configuration) {
	if k := kubeOf(cfg); k != nil && c.skipClientValidation(ctx) {
		k.skipValidation = true
	}
}

// fieldValidation caches whether the server validates fields itself: 0 not known yet, 1 yes, 2 no.
type fieldValidation struct{ state atomic.Int32 }

// skipClientValidation reports whether Helm's client-side OpenAPI validation would be skipped anyway by
// this server. Any doubt (an error, an unparsable version) keeps Helm's validation.
func (c *Client) skipClientValidation(ctx context.Context) bool {
	switch c.fieldValidation.state.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	// What discovery's ServerVersion does, with the operation's context.
	raw, err := c.clientset.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	var v version.Info
	if err != nil || json.Unmarshal(raw, &v) != nil {
		return false
	}
	major, minor, ok := parseVersion(v.Major, v.Minor)
	if !ok {
		return false
	}
	if major > 1 || major == 1 && minor >= fieldValidationGAMinor {
		c.fieldValidation.state.Store(1)
		return true
	}
	c.fieldValidation.state.Store(2)
	return false
}

// parseVersion reads /version's major and minor, which vendors may suffix with "+" ("27+").
func parseVersion(majorField, minorField string) (major, minor int, ok bool) {
	number := func(s string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSuffix(s, "+"))
		return n, err == nil
	}
	major, ok1 := number(majorField)
	minor, ok2 := number(minorField)
	return major, minor, ok1 && ok2
}
