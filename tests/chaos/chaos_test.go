package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// The soak: a fleet of real API servers, some reached by kubeconfig and some through agents, two workers,
// Temporal on SQLite, a git server and a chart repository, each its own process. A driver pushes commits
// and publishes chart versions without pause while a killer SIGKILLs one process at random, at random
// moments, and starts it again after a random pause. When the kills are done every release on every
// cluster must converge to the last desired state with one Helm revision per desired state it was given,
// none pending, the status Ready with exact counts, and nothing left behind. CHAOS_SEED replays a run's
// choices (not its timing).
func TestChaosSoak(t *testing.T) {
	if testing.Short() || os.Getenv("FLOTILLA_CHAOS") == "" {
		// Beside the other scenarios its kills and API servers would load the machine they share; make test
		// runs it after them.
		t.Skip("the soak runs from make chaos, and from make test after the other tests (FLOTILLA_CHAOS=1)")
	}
	cfg := configFromEnv(t)
	t.Logf("chaos: seed %d (CHAOS_SEED=%d replays its choices), %d kills or %.0f minutes, clusters %d by kubeconfig and %d by agent",
		cfg.Seed, cfg.Seed, cfg.Kills, cfg.Minutes, cfg.KubeconfigClusters, cfg.AgentClusters)
	soak := newSoak(t, cfg)
	soak.run()
	soak.converge()
	soak.checkReleases()
	soak.stopFlotilla()
	soak.checkNothingLeftInCaches()
	soak.report()
}

// soak holds the fleet, the record of what the driver asked for and what the killer did.
type soak struct {
	t        *testing.T
	cfg      config
	rng      *rand.Rand
	s        *harness.Stack
	clusters []fleetCluster
	git      *gitServer
	charts   *chartServer
	repo     *harness.Repo
	victims  []*victim
	other    *proc.Process
	agents   map[string]*proc.Process
	// pids are every process the soak's fleet ran, checked gone when the test has ended.
	pids map[int]fleetProcess
	tmp  string

	// versions is the manifest bundles' current desired state; given counts the desired states each
	// release was handed (its first included); chartVersion is the newest published.
	versions     map[string]int
	given        map[string]int
	chartVersion int
	head         string

	res result
}

func newSoak(t *testing.T, cfg config) *soak {
	k := &soak{t: t, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)), agents: map[string]*proc.Process{},
		pids: map[int]fleetProcess{}, versions: map[string]int{}, given: map[string]int{}}
	k.res = result{Seed: cfg.Seed, KillsByKind: map[string]int{}}
	// Every process of the fleet writes its temporary files here, so that what one leaves behind is seen:
	// registered first, the check runs after every other cleanup has stopped them.
	k.tmp = t.TempDir()
	procTmp := filepath.Join(k.tmp, "tmp")
	require.NoError(t, os.MkdirAll(procTmp, 0o755))
	t.Setenv("TMPDIR", procTmp)
	t.Cleanup(func() { k.checkNothingLeftBehind(procTmp) })

	for i := 0; i < cfg.KubeconfigClusters; i++ {
		k.clusters = append(k.clusters, fleetCluster{Name: fmt.Sprintf("k%d", i+1)})
	}
	for i := 0; i < cfg.AgentClusters; i++ {
		k.clusters = append(k.clusters, fleetCluster{Name: fmt.Sprintf("p%d", i+1), Agent: true})
	}

	// The chart repository and the git server are laid out first: the workers' credentials name them.
	port, err := proc.FreePort()
	require.NoError(t, err)
	chartRepo, err := devenv.PrepareChartRepo(filepath.Join(k.tmp, "charts"), fmt.Sprintf("127.0.0.1:%d", port))
	require.NoError(t, err)
	k.charts = &chartServer{repo: chartRepo}
	k.publishChart()
	k.git = prepareGitServer(t, filepath.Join(k.tmp, "git"))
	creds := credentialsFile(t, k.tmp, k.git, chartRepo)

	k.s = harness.Start(t, harness.Options{Clusters: clusterOptions(k.clusters), OwnTemporal: true,
		WorkerArgs: []string{"--credentials", creds}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, k.charts.serve(ctx))
	t.Cleanup(func() { _ = k.charts.proc.Stop(5 * time.Second) })
	for _, b := range manifestBundles {
		k.versions[b] = 1
		k.given[b] = 1
	}
	k.repo = k.s.NewRepo(bundleFiles(chartRepo.URL, k.versions))
	head, err := devenv.Git(k.repo.Dir, "rev-parse", "HEAD")
	require.NoError(t, err)
	k.head = strings.TrimSpace(head)
	require.NoError(t, k.git.serve(ctx, filepath.Dir(k.repo.Dir)))
	t.Cleanup(func() { _ = k.git.proc.Stop(5 * time.Second) })
	k.other = k.s.StartOtherWorker("two")

	for _, c := range k.clusters {
		if c.Agent {
			k.s.AddAgentCluster(c.Name, nil, nil)
			k.agents[c.Name] = k.s.StartAgent(c.Name, c.Name)
		} else {
			k.s.AddCluster(c.Name, c.Name, nil, nil)
		}
	}
	k.s.Apply(gitRepoYAML(k.git.repoURL(filepath.Base(k.repo.Dir)), k.git))
	k.s.WaitStatus("chaos", 5*time.Minute, "Ready before the first kill", k.converged)
	k.victims = k.fleetVictims()
	k.recordPIDs()
	return k
}

// run drives and kills until the kills are done or the time is up.
func (k *soak) run() {
	start := time.Now()
	deadline := start.Add(time.Duration(k.cfg.Minutes * float64(time.Minute)))
	nextStep := time.Now().Add(k.between(300*time.Millisecond, 3*time.Second))
	drive := func(d time.Duration) {
		until := time.Now().Add(d)
		for {
			now := time.Now()
			if !now.Before(until) {
				return
			}
			if !now.Before(nextStep) {
				k.step()
				nextStep = time.Now().Add(k.between(300*time.Millisecond, 3*time.Second))
				continue
			}
			time.Sleep(min(until.Sub(now), nextStep.Sub(now)))
		}
	}
	for k.res.Kills < k.cfg.Kills && time.Now().Before(deadline) {
		drive(k.between(200*time.Millisecond, 4*time.Second))
		v := k.victims[k.rng.IntN(len(k.victims))]
		if len(v.instances) > 0 {
			v = v.instances[k.rng.IntN(len(v.instances))]
		}
		require.NoError(k.t, v.kill(), "killing %s", v.name)
		k.res.Kills++
		k.res.KillsByKind[v.kind]++
		drive(k.between(0, 5*time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		err := v.start(ctx)
		cancel()
		require.NoError(k.t, err, "starting %s again after kill %d", v.name, k.res.Kills)
		k.recordPIDs()
		if k.res.Kills%10 == 0 {
			k.t.Logf("chaos: %d kills in %s, %d commits, %d chart versions", k.res.Kills, time.Since(start).Round(time.Second),
				k.res.Commits, k.res.ChartVersions)
		}
	}
	k.res.SoakSeconds = time.Since(start).Seconds()
}

// step is one change of desired state: a commit changing a manifest bundle, or a new chart version.
func (k *soak) step() {
	if k.rng.IntN(10) < 4 {
		k.publishChart()
		return
	}
	b := manifestBundles[k.rng.IntN(len(manifestBundles))]
	k.versions[b]++
	k.given[b]++
	k.head = k.repo.Commit(bundleFiles(k.charts.repo.URL, k.versions), fmt.Sprintf("%s v%d", b, k.versions[b]))
	k.res.Commits++
}

func (k *soak) publishChart() {
	k.chartVersion++
	_, err := k.charts.repo.Publish(chartName, k.chartVersionString())
	require.NoError(k.t, err)
	k.given[chartName]++
	k.res.ChartVersions++
}

func (k *soak) chartVersionString() string { return fmt.Sprintf("0.1.%d", k.chartVersion) }

func (k *soak) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(k.rng.Int64N(int64(hi-lo)+1))
}

// fleetProcess is a process the soak's fleet ran: a PID names it only with its start time.
type fleetProcess struct {
	what, start string
}

func (k *soak) recordPIDs() {
	add := func(pid int, what string) {
		if start := startOf(pid); start != "" {
			k.pids[pid] = fleetProcess{what: what, start: start}
		}
	}
	add(k.s.Temporal.PID(), "temporal")
	if k.s.Worker != nil {
		add(k.s.Worker.PID(), "worker")
	}
	add(k.other.PID(), "worker two")
	for name, a := range k.agents {
		add(a.PID(), "agent "+name)
	}
	add(k.git.proc.PID(), "git server")
	add(k.charts.proc.PID(), "chart repository")
	for _, pid := range pidsIn(k.s.K8s.PIDDir()) {
		add(pid, "cluster process")
	}
}
