package bench

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/internal/devenv"
	"github.com/flotilla-gitops/flotilla/internal/testsrv/chartrepo"
	"github.com/flotilla-gitops/flotilla/internal/testsrv/testchart"
)

// remote-chart-100: one chart deployed to simulated clusters twice in the same run, once vendored in the
// git repository and once from a Helm repository (HTTPS, basic auth, a CA of its own), same chart bytes,
// same cluster count. What it prices is the remote path: resolving the source in the plan, fetching the
// archive once into the worker's cache, and loading it from there for every cluster.

const (
	chartSourceGit      = "git"
	chartSourceHelmRepo = "helm-repo"
	// benchChartName and benchChartVersion are the chart both sides deploy; the remote side asks for it
	// by constraint, so the plan resolves the index as a user's fleet.yaml would make it.
	benchChartName       = "web"
	benchChartVersion    = "1.0.0"
	benchChartConstraint = "^1.0"
	// benchChartPayloads is how many ~10 KB ConfigMaps the chart adds to testchart's own one: ten objects
	// a cluster, as in deploy-1x10.
	benchChartPayloads = 9
	// chartCredentials is the worker's credentials entry the remote GitRepo names (helmSecretName).
	chartCredentials = "bench-charts"
	chartRepoUser    = "bench"
	// chartRepoPassword guards a loopback server that lives for one experiment.
	chartRepoPassword = "bench-chart-pa55word"
	// chartVersionsDeployed and chartWorkers give the archive GET goal: one per version per worker.
	chartVersionsDeployed = 1
	chartWorkers          = 1
)

// benchChart is testchart's chart with ConfigMaps of the benchmark's payload added, so that both sides
// render, apply and check the same ten objects the manifest experiments do.
func benchChart() *chart.Chart {
	c := testchart.New(benchChartName, benchChartVersion)
	for i := 0; i < benchChartPayloads; i++ {
		tmpl := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings-%02d\ndata:\n  settings.conf: |\n%s", i, payload)
		c.Templates = append(c.Templates, &chart.File{Name: fmt.Sprintf("templates/settings-%02d.yaml", i), Data: []byte(tmpl)})
	}
	return c
}

// remoteChart runs both sides on n simulated clusters, the vendored chart first, and returns a row each.
func (e *env) remoteChart(ctx context.Context, name string, n int) ([]Result, error) {
	repo, err := chartrepo.Start(chartrepo.Options{Dir: filepath.Join(e.dir, "chartrepo"), Username: chartRepoUser, Password: chartRepoPassword})
	if err != nil {
		return nil, err
	}
	defer repo.Close()
	pub, err := repo.Publish(benchChart())
	if err != nil {
		return nil, err
	}
	creds, err := writeChartCredentials(filepath.Join(e.dir, "credentials", "charts.yaml"), repo.CAPEM)
	if err != nil {
		return nil, err
	}
	gets := func() (archive, index int) { return repo.Gets(pub.Path), repo.Gets("/index.yaml") }

	var out []Result
	side := func(source string, dc deployCase) (Result, error) {
		dc.experiment, dc.clusters, dc.bundles, dc.cms, dc.simulate, dc.keep = name, n, 1, benchChartPayloads+1, true, true
		archive0, index0 := gets()
		res, r, err := e.deploy(ctx, dc)
		if err != nil {
			return res, err
		}
		defer r.stop()
		res.ChartSource = source
		archive, index := gets()
		res.ChartArchiveGets, res.ChartIndexGets = ptr(archive-archive0), ptr(index-index0)
		if source == chartSourceGit {
			if archive != archive0 || index != index0 {
				return res, fmt.Errorf("%s: the vendored chart's run read the Helm repository (%d archive, %d index GETs)",
					dc.tag, archive-archive0, index-index0)
			}
			// Zero GETs say nothing a reader needs on this side.
			res.ChartArchiveGets, res.ChartIndexGets = nil, nil
			return res, nil
		}
		if archive == archive0 {
			return res, fmt.Errorf("%s: the Helm repository served no archive: the chart did not come from it", dc.tag)
		}
		return res, r.deployedDigest(ctx, dc.tag, n, pub.Digest)
	}

	git, err := side(chartSourceGit, deployCase{tag: "rcgit", writeRepo: func(dir string) (string, error) {
		return writeChartRepo(dir, "helm:\n  releaseName: "+benchChartName+"\n", pub.Data)
	}})
	if err != nil {
		return out, err
	}
	out = append(out, git)
	remote, err := side(chartSourceHelmRepo, deployCase{tag: "rcrepo", helmSecretName: chartCredentials, workerArgs: []string{"--credentials", creds},
		writeRepo: func(dir string) (string, error) {
			return writeChartRepo(dir, fmt.Sprintf("helm:\n  repo: %s\n  chart: %s\n  version: %q\n  releaseName: %s\n",
				repo.URL, benchChartName, benchChartConstraint, benchChartName), nil)
		}})
	if err != nil {
		return out, err
	}
	remote.GitChartSeconds = ptr(git.FlotillaSeconds)
	remote.Ratio = ptr(round(remote.FlotillaSeconds/git.FlotillaSeconds, 2))
	e.logf("  %s: remote chart Ready in %.2fs against %.2fs vendored (ratio %.2f); %d archive GETs, %d index GETs",
		name, remote.FlotillaSeconds, git.FlotillaSeconds, *remote.Ratio, *remote.ChartArchiveGets, *remote.ChartIndexGets)
	return append(out, remote), nil
}

// deployedDigest checks that every cluster's bundle reports the published archive's digest: the row
// measured the remote chart, not something else that happened to be Ready.
func (r *run) deployedDigest(ctx context.Context, gitRepo string, n int, digest string) error {
	st, err := r.status(ctx, gitRepo)
	if err != nil {
		return err
	}
	if len(st.Clusters) != n {
		return fmt.Errorf("%s: %d clusters in the status, %d expected", gitRepo, len(st.Clusters), n)
	}
	for _, c := range st.Clusters {
		for _, b := range c.Bundles {
			if b.ChartDigest != digest {
				return fmt.Errorf("%s: cluster %s bundle %s deploys chart digest %q, not the published %s", gitRepo, c.Name, b.Name, b.ChartDigest, digest)
			}
		}
	}
	return nil
}

// writeChartCredentials writes the worker's credentials file (--credentials) with the repository's
// basic auth and CA under chartCredentials, readable by its owner only as the worker expects of secrets.
func writeChartCredentials(file string, caPEM []byte) (string, error) {
	data, err := yaml.Marshal(map[string]map[string]string{chartCredentials: {
		"username": chartRepoUser, "password": chartRepoPassword, "caBundle": string(caPEM),
	}})
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	return file, os.WriteFile(file, data, 0o600)
}

// writeChartRepo creates a repository of one bundle, bundles/web, whose fleet.yaml is fleetYAML, with the
// chart archive's files beside it when archive is given (a vendored chart), and returns HEAD.
func writeChartRepo(dir, fleetYAML string, archive []byte) (string, error) {
	bundleDir := filepath.Join(dir, "bundles", benchChartName)
	if err := os.MkdirAll(bundleDir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(bundleDir, "fleet.yaml"), []byte("name: "+benchChartName+"\n"+fleetYAML), 0o644); err != nil {
		return "", err
	}
	if archive != nil {
		if err := untarChart(archive, bundleDir); err != nil {
			return "", err
		}
	}
	if _, err := devenv.Git(dir, "init", "-q", "-b", "main"); err != nil {
		return "", err
	}
	return devenv.Commit(dir, "one chart")
}

// untarChart writes a chart archive's files into dir, without the archive's top folder (<name>/), so that
// the repository holds byte for byte what the Helm repository serves.
func untarChart(archive []byte, dir string) error {
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	files := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		_, rel, ok := strings.Cut(path.Clean(h.Name), "/")
		if !ok || rel == "" || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("chart archive entry %q outside its folder", h.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		files++
	}
	if files == 0 {
		return errors.New("chart archive holds no file")
	}
	return nil
}
