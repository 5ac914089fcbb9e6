package render

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet/safepath"
)

// overlayRepo is a kustomize base and a prod overlay that uses it from a sibling folder, as Fleet users
// lay them out.
func overlayRepo() map[string]string {
	return map[string]string{
		"apps/base/kustomization.yaml": "resources:\n- deploy.yaml\n- svc.yaml\n",
		"apps/base/deploy.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n",
		"apps/base/svc.yaml":           "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n",
		"apps/overlays/prod/kustomization.yaml": "resources:\n- ../../base\nnamePrefix: prod-\npatches:\n- path: replicas.yaml\n" +
			"commonAnnotations:\n  docs: https://example.com/runbook\nconfigMapGenerator:\n- name: urls\n  literals:\n  - API=https://api.example.com\n",
		"apps/overlays/prod/replicas.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n",
	}
}

// sparse adds a file of size bytes that costs no disk.
func sparse(t *testing.T, root, rel string, size int64) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755))
	f, err := os.Create(filepath.Join(root, rel))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
}

func TestAKustomizationUsesABaseInASiblingFolder(t *testing.T) {
	root := writeRepo(t, overlayRepo())
	out, err := kustomize(root, "apps/overlays/prod")
	require.NoError(t, err)
	require.Contains(t, string(out), "name: prod-web")
	require.Contains(t, string(out), "replicas: 3")
	require.Contains(t, string(out), "docs: https://example.com/runbook", "a URL that is only a value is no remote reference")
	require.Contains(t, string(out), "API: https://api.example.com")
}

// A build reads what its kustomizations name and nothing else: in a repository that also holds a file over
// the per-file limit, 40 MiB of other files and a symlink out of it, a limit of exactly the kustomization's
// own bytes is enough.
func TestABuildReadsOnlyTheFilesItsKustomizationsName(t *testing.T) {
	files := overlayRepo()
	var own int64
	for _, content := range files {
		own += int64(len(content))
	}
	files["apps/other/kustomization.yaml"] = "resources:\n- cm.yaml\n"
	files["apps/other/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n"
	root := writeRepo(t, files)
	sparse(t, root, "data/huge.bin", safepath.MaxFileSize+1)
	for _, name := range []string{"a", "b", "c", "d"} {
		sparse(t, root, "data/chunk-"+name+".bin", 10<<20)
	}
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "secret"), filepath.Join(root, "apps", "leak.yaml")))

	out, err := kustomizeWithin(root, "apps/overlays/prod", own)
	require.NoError(t, err)
	require.Contains(t, string(out), "name: prod-web")
	require.NotContains(t, string(out), "name: other")

	_, err = kustomizeWithin(root, "apps/overlays/prod", own-1)
	require.ErrorContains(t, err, "a kustomize build may read", "one byte less is over the limit")
}

func TestABuildReadingMoreThanTheLimitFailsNamingIt(t *testing.T) {
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\ndata:\n  blob: " + strings.Repeat("x", 40<<10) + "\n"
	root := writeRepo(t, map[string]string{
		"app/kustomization.yaml": "resources:\n- a.yaml\n- b.yaml\n",
		"app/a.yaml":             strings.Replace(big, "NAME", "a", 1),
		"app/b.yaml":             strings.Replace(big, "NAME", "b", 1),
	})
	_, err := kustomizeWithin(root, "app", 64<<10)
	require.ErrorContains(t, err, "kustomize app: app/b.yaml: the build would read more than the 64 KiB a kustomize build may read from the repository")

	_, err = kustomizeWithin(root, "app", 128<<10)
	require.NoError(t, err)
}

func TestASymlinkOutOfTheRepositoryIsRefused(t *testing.T) {
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: hunter2\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "kustomization.yaml"), []byte("resources:\n- secret.yaml\n"), 0o600))

	for name, tc := range map[string]struct {
		files map[string]string
		links map[string]string
		want  string
	}{
		"a resource linked out": {
			files: map[string]string{"app/kustomization.yaml": "resources:\n- secret.yaml\n"},
			links: map[string]string{"app/secret.yaml": filepath.Join(outside, "secret.yaml")},
			want:  `"app/secret.yaml": goes through a symlink that resolves outside the repository`,
		},
		"a base linked out": {
			files: map[string]string{"app/kustomization.yaml": "resources:\n- ../shared\n"},
			links: map[string]string{"shared": outside},
			want:  "resolves outside the repository",
		},
		"the kustomization linked out": {
			links: map[string]string{"app/kustomization.yaml": filepath.Join(outside, "kustomization.yaml")},
			want:  `"app/kustomization.yaml": goes through a symlink that resolves outside the repository`,
		},
		"a base above the repository": {
			files: map[string]string{"app/kustomization.yaml": "resources:\n- ../../../../../../etc\n"},
			want:  "leaves the repository",
		},
	} {
		root := writeRepo(t, tc.files)
		for at, target := range tc.links {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, at)), 0o755))
			require.NoError(t, os.Symlink(target, filepath.Join(root, at)))
		}
		_, err := kustomize(root, "app")
		var esc *safepath.EscapeError
		require.ErrorAs(t, err, &esc, name)
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), "hunter2", name)
	}
}

// Kustomize clones git repositories and downloads http(s) files a kustomization names, wherever it names
// them; none of it may happen.
func TestKustomizeNeverReachesTheNetwork(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n"))
	}))
	defer srv.Close()
	patchTransformer := "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: " + srv.URL + "/patch.yaml\ntarget:\n  kind: ConfigMap\n"

	for name, files := range map[string]map[string]string{
		"an http file":            {"app/kustomization.yaml": "resources:\n- " + srv.URL + "/cm.yaml\n"},
		"a git base over http":    {"app/kustomization.yaml": "resources:\n- " + srv.URL + "/org/repo.git//base?ref=v1\n"},
		"a go-getter git base":    {"app/kustomization.yaml": "resources:\n- git::" + srv.URL + "/org/repo.git\n"},
		"a GitHub base":           {"app/kustomization.yaml": "resources:\n- github.com/org/repo//base\n"},
		"an scp-like git base":    {"app/kustomization.yaml": "resources:\n- git@127.0.0.1:org/repo.git\n"},
		"a file:// git base":      {"app/kustomization.yaml": "resources:\n- file:///srv/git/other-tenant.git\n"},
		"a component":             {"app/kustomization.yaml": "components:\n- " + srv.URL + "/org/repo.git//component\n"},
		"a key in another case":   {"app/kustomization.yaml": "Resources:\n- " + srv.URL + "/cm.yaml\n"},
		"a legacy base":           {"app/kustomization.yaml": "bases:\n- " + srv.URL + "/org/repo.git\n"},
		"a patch file":            {"app/kustomization.yaml": "patches:\n- path: " + srv.URL + "/patch.yaml\n"},
		"a generator's file":      {"app/kustomization.yaml": "configMapGenerator:\n- name: c\n  files:\n  - cfg=" + srv.URL + "/cfg\n"},
		"an openapi schema":       {"app/kustomization.yaml": "openapi:\n  path: " + srv.URL + "/schema.json\n"},
		"an inline transformer":   {"app/kustomization.yaml": "transformers:\n- |\n  " + strings.ReplaceAll(patchTransformer, "\n", "\n  ") + "\n"},
		"a transformer in a file": {"app/kustomization.yaml": "transformers:\n- t.yaml\n", "app/t.yaml": patchTransformer},
		"a transformer spelt with an escape": {
			"app/kustomization.yaml": "transformers:\n- t.yaml\n",
			"app/t.yaml":             strings.Replace(patchTransformer, "kind: PatchTransformer", `kind: "Patch\u0054ransformer"`, 1),
		},
		"a transformer in a base": {
			"app/kustomization.yaml":          "transformers:\n- ../transformers\n",
			"transformers/kustomization.yaml": "resources:\n- list.yaml\n",
			"transformers/list.yaml":          "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(patchTransformer, "\n", "\n  ") + "\n",
		},
		"a base's remote resource": {
			"app/kustomization.yaml":  "resources:\n- ../base\n",
			"base/kustomization.yaml": "resources:\n- " + srv.URL + "/cm.yaml\n",
		},
	} {
		root := writeRepo(t, files)
		_, err := kustomize(root, "app")
		var remote *RemoteReferenceError
		require.True(t, errors.As(err, &remote), "%s: %v", name, err)
		require.ErrorContains(t, err, "remote bases and files are not supported, vendor them into the repository", name)
	}
	require.Zero(t, hits.Load(), "nothing was fetched")
}

// A kustomization that transformers come from could rewrite them after they were checked, e.g. patch a
// PatchTransformer's path into a URL: it may only list resources.
func TestATransformerFolderMayNotRewriteItsTransformers(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	root := writeRepo(t, map[string]string{
		"app/kustomization.yaml": "transformers:\n- ../transformers\n",
		"transformers/kustomization.yaml": "resources:\n- t.yaml\npatches:\n- target:\n    kind: PatchTransformer\n  patch: |\n" +
			"    - op: replace\n      path: /path\n      value: " + srv.URL + "/patch.yaml\n",
		"transformers/t.yaml": "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: local.yaml\ntarget:\n  kind: ConfigMap\n",
	})
	_, err := kustomize(root, "app")
	require.ErrorContains(t, err, "kustomize app: transformers/kustomization.yaml: patches: "+
		"a kustomization that generators, transformers or validators come from may only list resources")
	require.Zero(t, hits.Load())
}

func TestTransformersFromAFolderOfTheRepositoryStillWork(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"app/kustomization.yaml":          "resources:\n- cm.yaml\ntransformers:\n- ../transformers\n",
		"app/cm.yaml":                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  level: info\n",
		"transformers/kustomization.yaml": "resources:\n- level.yaml\n",
		"transformers/level.yaml": "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: level\npath: level-patch.yaml\n" +
			"target:\n  kind: ConfigMap\n",
		"app/level-patch.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  level: debug\n",
	})
	out, err := kustomize(root, "app")
	require.NoError(t, err)
	require.Contains(t, string(out), "level: debug")
}

func TestARemoteReferenceIsReportedWithoutItsCredentials(t *testing.T) {
	root := writeRepo(t, map[string]string{"app/kustomization.yaml": "resources:\n- https://bot:s3cr3t@git.example.com/org/repo.git\n"})
	_, err := kustomize(root, "app")
	require.ErrorContains(t, err, `kustomize app: app/kustomization.yaml: resources "https://bot:xxxxx@git.example.com/org/repo.git"`)
	require.NotContains(t, err.Error(), "s3cr3t")

	root = writeRepo(t, map[string]string{"app/kustomization.yaml": "resources:\n- git::https://bot:s3cr3t@git.example.com/org/repo.git\n"})
	_, err = kustomize(root, "app")
	require.ErrorContains(t, err, `"git::https://bot:xxxxx@git.example.com/org/repo.git"`)
	require.NotContains(t, err.Error(), "s3cr3t")
}

func TestTheKustomizeFileSystemRefusesWrites(t *testing.T) {
	root := writeRepo(t, overlayRepo())
	repo, err := safepath.Open(root)
	require.NoError(t, err)
	defer repo.Close()
	fsys := newRepoFS(repo, MaxKustomizeRead)
	target := mounted("apps/base/deploy.yaml")
	require.ErrorContains(t, fsys.WriteFile(target, []byte("x")), "apps/base/deploy.yaml: kustomize may not write to the repository")
	_, err = fsys.Create(target)
	require.Error(t, err)
	require.Error(t, fsys.Mkdir(mounted("new")))
	require.Error(t, fsys.MkdirAll(mounted("new/deeper")))
	require.Error(t, fsys.RemoveAll(mounted("apps")))
	f, err := fsys.Open(target)
	require.NoError(t, err)
	_, err = f.Write([]byte("x"))
	require.Error(t, err)
	data, err := os.ReadFile(filepath.Join(root, "apps", "base", "deploy.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(data), "kind: Deployment", "unchanged")

	names, err := fsys.ReadDir(mounted("apps/base"))
	require.NoError(t, err)
	require.Equal(t, []string{"deploy.yaml", "kustomization.yaml", "svc.yaml"}, names)
	require.True(t, fsys.IsDir(mounted("apps")))
	require.False(t, fsys.Exists(mounted("apps/nothing.yaml")))
	require.False(t, fsys.Exists("/etc/passwd"), "outside the mount")
}
