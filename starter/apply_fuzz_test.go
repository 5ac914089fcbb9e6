package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
)

const fuzzApplyFile = "fuzz-apply.yaml"

// FuzzParseDocuments reads any text as `flotilla apply -f` does. Every error names the file; what is
// accepted is one typed object per document, of a kind apply knows, without what apply refuses (a
// GitRepo's serviceAccount or helmOp), a HelmOp carried as the GitRepo it runs as; and each object,
// written out again, reads back the same.
func FuzzParseDocuments(f *testing.F) {
	for _, s := range []string{
		"apiVersion: fleet.cattle.io/v1alpha1\nkind: GitRepo\nmetadata:\n  name: web\n  namespace: team-a\nspec:\n  repo: https://github.com/rancher/fleet-examples\n" +
			"  branch: main\n  paths: [simple]\n  targets:\n  - clusterSelector: {matchLabels: {env: prod}}\n  - clusterGroup: edge\n",
		"kind: Cluster\nmetadata: {name: edge-1, labels: {env: prod}}\nspec:\n  kubeConfigPath: /etc/flotilla/edge-1.kubeconfig\n" +
			"  templateValues: {region: eu-west, replicas: 3, generated: {fqdn: edge-1.example.com}}\n" +
			"---\nkind: ClusterGroup\nmetadata: {name: prod}\nspec:\n  selector:\n    matchExpressions: [{key: env, operator: In, values: [prod]}]\n",
		"apiVersion: fleet.cattle.io/v1alpha1\nkind: HelmOp\nmetadata: {name: nginx}\nspec:\n  helm:\n    repo: https://charts.bitnami.com/bitnami\n" +
			"    chart: nginx\n    version: 15.x\n    values: {replicaCount: 2}\n  namespace: web\n  targets:\n  - clusterSelector: {matchLabels: {env: prod}}\n",
		"kind: GitRepo\nmetadata: {name: web}\nspec:\n  repo: https://git.example.com/web.git\n  caBundle: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\n" +
			"  insecureSkipTLSVerify: true\n  syncWindows:\n  - {kind: allow, schedule: '0 22 * * 1-5', duration: 8h}\n  rolloutStrategy: {}\n",
		"kind: Cluster\nmetadata: {name: agent-1}\nspec:\n  agent: {image: 'ghcr.io/flotilla-gitops/flotilla:v1', maxConcurrentActivities: 4, helmQPS: 5.5}\n",
		"---\n# only a comment\n---\nkind: GitRepo\nmetadata: {name: web}\nspec: {repo: https://x/y.git}\n...\n",
		"kind: GitRepo\nmetadata: {name: web}\nspec: {repo: https://example.com/web.git, serviceAccount: deployer}\n",
		"kind: GitRepo\nmetadata: {name: web}\nspec: {repo: https://example.com/web.git, helmSecretNameForPaths: s}\n",
		"kind: GitRepo\nmetadata: {name: web}\nspec: {repo: 'helmop:web', helmOp: {helm: {chart: nginx}}}\n",
		"kind: HelmOp\nmetadata: {name: x}\nspec: {helm: {chart: nginx}}\n",
		"apiVersion: v1\nkind: GitRepo\nmetadata: {name: web}\n",
		"kind: Secret\nmetadata: {name: creds}\n",
		"kind: GitRepo\nmetadata: {name: web}\nspec: {caBundle: '-----BEGIN'}\n",
		"kind: [GitRepo\n", "---x\n", "", "\n---\n", "{}", "kind: Cluster\nkind: Cluster\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("apply files are kilobytes; a larger one only slows the search")
		}
		docs, err := parseDocuments(fuzzApplyFile, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), fuzzApplyFile+": ") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if len(docs) == 0 {
			t.Fatal("accepted without a document")
		}
		for i, d := range docs {
			checkDocument(t, i, d)
		}
	})
}

func checkDocument(t *testing.T, i int, d document) {
	t.Helper()
	var obj any
	var meta fleet.ObjectMeta
	set := 0
	for _, p := range []bool{d.gitRepo != nil && d.helmOp == nil, d.helmOp != nil, d.cluster != nil, d.group != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		t.Fatalf("document %d (%s): %d objects", i+1, d.kind, set)
	}
	switch d.kind {
	case fleet.KindGitRepo:
		if d.gitRepo == nil || d.gitRepo.Spec.ServiceAccount != "" || d.gitRepo.Spec.HelmOp != nil {
			t.Fatalf("document %d: a GitRepo apply refuses: %+v", i+1, d.gitRepo)
		}
		obj, meta = d.gitRepo, d.gitRepo.Metadata
	case fleet.KindHelmOp:
		if d.helmOp == nil || d.gitRepo == nil || d.gitRepo.Spec.HelmOp == nil || d.gitRepo.Spec.Repo != fleet.HelmOpRepoPrefix+d.name {
			t.Fatalf("document %d: a HelmOp not carried as its GitRepo", i+1)
		}
		obj, meta = d.helmOp, d.helmOp.Metadata
	case fleet.KindCluster:
		obj, meta = d.cluster, d.cluster.Metadata
	case fleet.KindClusterGroup:
		obj, meta = d.group, d.group.Metadata
	default:
		t.Fatalf("document %d: accepted kind %q", i+1, d.kind)
	}
	if meta.Name != d.name {
		t.Fatalf("document %d: named %q, its metadata %q", i+1, d.name, meta.Name)
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatalf("document %d: cannot be written out: %v", i+1, err)
	}
	back, err := parseDocuments(fuzzApplyFile, out)
	if err != nil {
		t.Fatalf("document %d, written out, is refused: %v\n%s", i+1, err, out)
	}
	// Compared as written: an empty map and no map are one thing to apply and to the workflows' payloads
	// (`labels: {}` reads as an empty map and is written out as none).
	if len(back) != 1 || dump(back[0]) != dump(d) {
		t.Fatalf("document %d, written out and read back, changed:\n%s\nwas %s\nis  %s", i+1, out, dump(d), dump(back[0]))
	}
}

func dump(d document) string {
	b, _ := json.Marshal([]any{d.kind, d.name, d.gitRepo, d.helmOp, d.cluster, d.group})
	return string(b)
}

// FuzzParsePairs reads --label and --annotation flags: each k=v with a key, the last of a key winning,
// no flag at all nil, and an error that names the flag and the pair refused.
func FuzzParsePairs(f *testing.F) {
	for _, s := range []string{"env=prod", "env=prod\nregion=eu-west", "a=1\na=2", "url=https://x/?a=b", "empty=", "=v", "novalue", "", "k=v\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lines string) {
		var pairs []string
		if lines != "" {
			pairs = strings.Split(lines, "\n")
		}
		got, err := parsePairs("label", pairs)
		want := map[string]string{}
		for _, p := range pairs {
			k, v, ok := strings.Cut(p, "=")
			if !ok || k == "" {
				if err == nil || err.Error() != fmt.Sprintf("--label %q: want key=value", p) {
					t.Fatalf("%q refused with %v", p, err)
				}
				return
			}
			want[k] = v
		}
		if err != nil {
			t.Fatalf("every pair has a key, and: %v", err)
		}
		if len(want) == 0 {
			if got != nil {
				t.Fatalf("no pair gives %v", got)
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}
