package activities

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
)

// Prepare renders every bundle of an agent-mode cluster's target on the management side, where the
// repository, the chart sources and their credentials are, and stores each rendering's package for the
// agent to fetch (ADR 22). What it returns is small: summaries and digests, never a chart or values.
func (a *Activities) Prepare(ctx context.Context, in api.PrepareInput) (api.PrepareResult, error) {
	t := in.Target
	h, err := a.renderHandle(ctx, t)
	if err != nil {
		return api.PrepareResult{}, err
	}
	stop := heartbeatEvery(ctx, 3*time.Second)
	defer stop()
	res := api.PrepareResult{Bundles: make([]api.PreparedBundle, len(t.Bundles))}
	err = a.forEach(len(t.Bundles), func(i int) error {
		p, err := a.prepareBundle(ctx, h, t, t.Bundles[i])
		res.Bundles[i] = p
		return err
	})
	if err != nil {
		return res, err
	}
	res.Grant = a.grantPreparedFor(t, in.Generation, res.Bundles)
	return res, nil
}

// renderHandle is the target's cluster and checkout, without a client: the management side renders for an
// agent-mode cluster it cannot reach.
func (a *Activities) renderHandle(ctx context.Context, t api.ClusterTarget) (*clusterHandle, error) {
	h, _, err := a.entry(ctx, t)
	if err != nil {
		return nil, err
	}
	if h.dir, err = a.checkout(ctx, gitcache.Remote{URL: t.Repo, Workspace: t.Key().Namespace, Secret: t.ClientSecretName, CABundle: t.CABundle,
		InsecureSkipTLSVerify: t.InsecureSkipTLSVerify}, t.Commit, t.HelmOp); err != nil {
		return nil, gitError(err)
	}
	return h, nil
}

// prepareBundle is one bundle's PreparedBundle. A bundle that does not render carries its error, as in
// Observe; only a failure to store a package fails the activity.
func (a *Activities) prepareBundle(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef) (api.PreparedBundle, error) {
	p := api.PreparedBundle{Bundle: ref.Name}
	rel, err := a.render(ctx, h, t, ref, false)
	if err != nil {
		p.Error, p.ErrorType = err.Error(), renderErrorType(err)
		return p, nil
	}
	if p.Release, err = rel.MarshalSummary(); err != nil {
		p.Error, p.ErrorType = fmt.Sprintf("bundle %q: %v", ref.Name, err), api.ErrTypeBundle
		return p, nil
	}
	if !rel.Deploy {
		return p, nil
	}
	key := packageKey(rel.DeploymentID, p.Release)
	if e, ok := a.packages.get(key); ok && a.Content.Has(e.digest) {
		p.Package, p.PackageSize = e.digest, e.size
		return p, nil
	}
	data, err := a.packageOf(ctx, h, t, ref)
	if err != nil {
		var pe *packageError
		if errors.As(err, &pe) {
			p.Error, p.ErrorType = err.Error(), api.ErrTypeBundle
			return p, nil
		}
		return p, err
	}
	digest, err := a.Content.Put(data)
	if err != nil {
		return p, fmt.Errorf("storing the package of bundle %q: %w", ref.Name, err)
	}
	a.packages.put(key, packageEntry{digest: digest, size: int64(len(data))})
	p.Package, p.PackageSize = digest, int64(len(data))
	return p, nil
}

// packageError is a rendering that cannot be packaged for an agent (render says why): the bundle's error.
type packageError struct{ err error }

func (e *packageError) Error() string { return e.err.Error() }
func (e *packageError) Unwrap() error { return e.err }

// packageOf renders a bundle in full and encodes it.
func (a *Activities) packageOf(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef) ([]byte, error) {
	full, err := a.render(ctx, h, t, ref, true)
	if err != nil {
		return nil, &packageError{err}
	}
	data, err := full.MarshalPackage()
	if err != nil {
		return nil, &packageError{fmt.Errorf("bundle %q: %w", ref.Name, err)}
	}
	return data, nil
}

// ReadContent is chunks of packages, for an agent, concatenated in order, and sealed to the cluster's
// key when the installation has one (ADR 26). It serves only the packages of the desired state the
// cluster's workflow holds now, read from that workflow, never from the request: an agent (or anyone on the
// namespace) names a cluster, and gets that cluster's current packages or nothing. A worker that does not
// hold a package (another worker made it, or its cache was cleared) renders it again from that desired
// state, with the GitRepo's own repository and credentials.
func (a *Activities) ReadContent(ctx context.Context, in api.ReadContentInput) ([]byte, error) {
	defer heartbeatEvery(ctx, 3*time.Second)() // rendering the package again can take seconds
	var total int64
	for _, c := range in.Chunks {
		if c.Length <= 0 || c.Offset < 0 {
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("package %s: chunk of %d bytes at %d", c.Digest, c.Length, c.Offset), api.ErrTypeBundle, nil)
		}
		total += c.Length
	}
	if total > api.ContentChunkSize {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%d bytes asked at once: at most %d are served", total, api.ContentChunkSize), api.ErrTypeBundle, nil)
	}
	asked := in.Target
	held, err := a.heldTarget(ctx, asked)
	if err != nil {
		return nil, err
	}
	if asked.Commit != held.Commit {
		if diffed, ok := a.diffTarget(ctx, asked); ok {
			held = diffed // `flotilla diff --commit`: the GitRepo planned this commit for the cluster
		}
	}
	h, err := a.renderHandle(ctx, held)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, total)
	for _, c := range in.Chunks {
		if err := a.belongs(ctx, h, held, c); err != nil {
			return nil, err
		}
		data, err := a.Content.ReadChunk(c.Digest, c.Offset, c.Length)
		if err != nil {
			return nil, err
		}
		out = append(out, data...)
	}
	if k, ok := a.clusterKey(held.Namespace, held.Cluster); ok {
		return k.Seal(ContentAAD(held.Namespace, held.Cluster, in.Chunks), out)
	}
	return out, nil
}

// heldTarget is the desired state the cluster's workflow holds for the GitRepo and cluster asked named.
func (a *Activities) heldTarget(ctx context.Context, asked api.ClusterTarget) (api.ClusterTarget, error) {
	if a.Targets == nil {
		return api.ClusterTarget{}, errors.New("this worker cannot read cluster workflows' desired states (no Targets)")
	}
	held, err := a.Targets.Target(ctx, asked.Key(), asked.Cluster)
	if err != nil {
		return api.ClusterTarget{}, fmt.Errorf("desired state of cluster %q for GitRepo %s: %w", clusterRef(asked), asked.Key(), err)
	}
	if held.Cluster != asked.Cluster || held.Key() != asked.Key() || !held.Agent {
		return api.ClusterTarget{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cluster %q of GitRepo %s is not served in pull mode",
			clusterRef(asked), asked.Key()), api.ErrTypeNotGranted, nil)
	}
	return held, nil
}

// diffTarget is the target asked's GitRepo planned for its cluster in a diff of asked's commit, if it did
// (api.QueryDiffTarget): the GitRepo's own plan for this cluster, as a rollback's would be, never the
// request's.
func (a *Activities) diffTarget(ctx context.Context, asked api.ClusterTarget) (api.ClusterTarget, bool) {
	t, err := a.Targets.DiffTarget(ctx, asked.Key(), asked.Cluster)
	if err != nil || t.Cluster != asked.Cluster || t.Key() != asked.Key() || !t.Agent || t.Commit != asked.Commit {
		return api.ClusterTarget{}, false
	}
	return t, true
}

// belongs checks that a chunk's package is the one held's desired state gives its bundle, rendering it
// again (and storing it) when this worker lacks it.
func (a *Activities) belongs(ctx context.Context, h *clusterHandle, held api.ClusterTarget, c api.ContentChunk) error {
	var ref *api.BundleRef
	for i := range held.Bundles {
		if held.Bundles[i].Name == c.Bundle {
			ref = &held.Bundles[i]
		}
	}
	if ref == nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("package %s: bundle %q is not in the desired state of cluster %q",
			c.Digest, c.Bundle, clusterRef(held)), api.ErrTypeNotGranted, nil)
	}
	p, err := a.prepareBundle(ctx, h, held, *ref)
	if err != nil {
		return err
	}
	if p.Package != c.Digest {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("package %s of bundle %q: the desired state cluster %q holds now gives %s; "+
			"the agent goes on with the next desired state", c.Digest, c.Bundle, clusterRef(held), orNothing(p.Package)), api.ErrTypeStale, nil)
	}
	return nil
}

func orNothing(digest string) string {
	if digest == "" {
		return "no package"
	}
	return digest
}

// packageIndex remembers which package each rendering was stored as, so an idle Prepare encodes nothing.
type packageIndex struct {
	mu      sync.Mutex
	entries map[[32]byte]packageEntry
}

type packageEntry struct {
	digest string
	size   int64
}

const packageIndexSize = 4096

// packageKey identifies a package by what it is made of: the deployment ID stands for the chart, the values
// and the manifests; the summary holds every other field of the package (the options outside the
// deployment ID, correctDrift among them, and the labels stamped on the objects, which tell two GitRepos'
// identical bundles apart). render's TestWhatChangesAPackageChangesItsName holds that to be all of it.
func packageKey(deploymentID string, summary []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(deploymentID))
	h.Write([]byte{0})
	h.Write(summary)
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

func (x *packageIndex) get(k [32]byte) (packageEntry, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[k]
	return e, ok
}

func (x *packageIndex) put(k [32]byte, e packageEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.entries == nil || len(x.entries) >= packageIndexSize {
		x.entries = map[[32]byte]packageEntry{} // forgetting costs one more encoding, never a wrong answer
	}
	x.entries[k] = e
}
