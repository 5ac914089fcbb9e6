package chartcheck

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
	"github.com/flotilla-gitops/flotilla/tests/env/needs"
)

// apiServer answers discovery and one ConfigMap in namespace shop, and records every path it is asked.
type apiServer struct {
	mu    sync.Mutex
	paths []string
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.paths = append(a.paths, r.URL.Path)
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	body, ok := map[string]string{
		"/version": `{"major":"1","minor":"34","gitVersion":"v1.34.4"}`,
		"/api":     `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`,
		"/apis":    `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`,
		"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[` +
			`{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list"]}]}`,
		"/api/v1/namespaces/shop/configmaps/seed":  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"seed","namespace":"shop"},"data":{"color":"blue"}}`,
		"/api/v1/namespaces/other/configmaps/seed": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"seed","namespace":"other"},"data":{"color":"red"}}`,
	}[r.URL.Path]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		body = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`
	}
	fmt.Fprint(w, body)
}

func (a *apiServer) asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.paths...)
}

type fakeInventory struct{ inv inventory.Inventory }

func (f fakeInventory) Read(context.Context) (inventory.Inventory, error) { return f.inv, nil }

// clusterChecker checks against the API server at url, registered as cluster edge-1.
func clusterChecker(t *testing.T, url string, limits Limits) *Checker {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: edge, cluster: {server: %q}}]
users: [{name: edge, user: {token: t0ken}}]
contexts: [{name: edge, context: {cluster: edge, user: edge}}]
current-context: edge
`, url)), 0o600))
	c := newTestChecker(t, limits)
	c.inventory = fakeInventory{inventory.Inventory{Clusters: []fleet.Cluster{{
		Metadata: fleet.ObjectMeta{Name: "edge-1"}, Spec: fleet.ClusterSpec{KubeConfigPath: kubeconfig}}}}}
	return c
}

// The child sees the cluster as the install will: its version, the API versions of the CRDs the install
// creates first, and lookups, confined to the release's namespace as agentclient confines them.
func TestTheCheckRendersWithTheClustersCapabilitiesAndConfinedLookups(t *testing.T) {
	api := &apiServer{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	c := clusterChecker(t, srv.URL, DefaultLimits())
	ch := loadChart(t, map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"crds/widget.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions: [{name: v1, served: true, storage: true}]\n",
		"templates/cm.yaml": `{{- $seed := lookup "v1" "ConfigMap" "shop" "seed" }}
{{- $other := lookup "v1" "ConfigMap" "other" "seed" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data:
  color: {{ $seed.data.color | quote }}
  other: {{ len $other | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  widgets: {{ .Capabilities.APIVersions.Has "example.com/v1/Widget" | quote }}
`,
	})
	r := install(ch, nil)
	r.Apply.ConfineToNamespace = "shop"
	ans, err := c.check(context.Background(), r)
	require.NoError(t, err)
	require.Contains(t, ans.Manifest, `color: "blue"`)
	require.Contains(t, ans.Manifest, `other: "0"`, "outside the namespace a lookup finds nothing")
	require.Contains(t, ans.Manifest, `kube: "v1.34.4"`)
	require.Contains(t, ans.Manifest, `widgets: "true"`)
	require.Contains(t, api.asked(), "/api/v1/namespaces/shop/configmaps/seed")
	require.NotContains(t, api.asked(), "/api/v1/namespaces/other/configmaps/seed", "the confined lookup never left the child")
}

// A child that waits on a cluster that never answers is killed at the wall-clock limit; that refusal is
// not remembered, since a busy machine or a slow cluster may answer in time later.
func TestAChildStuckOnTheClusterIsKilledAtTheTimeLimit(t *testing.T) {
	needs.Long(t, "a child held past the time limit")
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer stuck.Close()
	l := DefaultLimits()
	l.Time = 2 * time.Second
	c := clusterChecker(t, stuck.URL, l)
	r := install(chartWith(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"), nil)
	err := c.Check(context.Background(), r)
	requireLimit(t, err, LimitTime, `chart "web": rendering exceeded the 2s time limit for chart templates`)
	_ = c.Check(context.Background(), r)
	require.EqualValues(t, 2, c.started.Load())
}
