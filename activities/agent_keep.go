package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// KeepAgent runs in the agent (ADR 23): it keeps the agent's own objects as the release
// api.AgentReleaseName in the agent's namespace. The release is installed or upgraded only when the digest
// it records differs from the desired one; the first install adopts the objects the operator applied
// (`flotilla agent manifest`), which are the same objects, so adoption changes no spec.
func (a *Activities) KeepAgent(ctx context.Context, in api.KeepAgentInput) (api.KeepAgentResult, error) {
	if a.Local == nil {
		return api.KeepAgentResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("cluster %q: only its flotilla-agent keeps its agent",
			fleet.DisplayName(in.Workspace, in.Cluster)), api.ErrTypeUnreachable, nil)
	}
	cl, err := a.Local.clientFor(in.Workspace, in.Cluster)
	if err != nil {
		return api.KeepAgentResult{}, err
	}
	// The agent's own Deployment runs with cluster-admin: only the management side may say what it is.
	if err := a.Local.guarded().verify(grantAgent, agentReleaseMessage(in.Workspace, in.Cluster, in.Namespace, in.Digest, in.Manifests), in.Grant); err != nil {
		return api.KeepAgentResult{}, err
	}
	name := fleet.DisplayName(in.Workspace, in.Cluster)
	stop := heartbeatEvery(ctx, 3*time.Second)
	defer stop()
	st, err := cl.Observe(ctx, in.Namespace, api.AgentReleaseName)
	if err != nil {
		return api.KeepAgentResult{}, a.clusterError(name, err)
	}
	if st.Pending() {
		// Left by an agent that was replaced in the middle of its own upgrade: the revision never finished.
		if err := cl.DiscardPending(ctx, in.Namespace, api.AgentReleaseName); err != nil {
			return api.KeepAgentResult{}, a.clusterError(name, err)
		}
		if st, err = cl.Observe(ctx, in.Namespace, api.AgentReleaseName); err != nil {
			return api.KeepAgentResult{}, a.clusterError(name, err)
		}
	}
	want := api.AgentDigestLabel(in.Digest)
	if st.Exists && st.Status == string(api.ReleaseDeployed) && st.Labels[api.LabelAgentConfigDigest] == want {
		return api.KeepAgentResult{Revision: st.Revision, Digest: in.Digest}, nil
	}
	req := agentclient.ApplyRequest{
		Name: api.AgentReleaseName, Namespace: in.Namespace, Chart: agentChart(in.Manifests),
		Labels:          map[string]string{api.LabelAgentConfigDigest: want, api.LabelCluster: in.Cluster},
		CreateNamespace: true,
		TakeOwnership:   true,
		MaxHistory:      3,
		Timeout:         2 * time.Minute,
		Description:     "flotilla: agent configuration " + in.Digest,
	}
	var r agentclient.ApplyResult
	if st.Exists {
		r, err = cl.Upgrade(ctx, req)
	} else {
		r, err = cl.Install(ctx, req)
	}
	if err != nil {
		return api.KeepAgentResult{}, a.clusterError(name, err)
	}
	a.logger().Info("agent release applied", zap.String("cluster", name), zap.String("digest", in.Digest),
		zap.String("previousDigest", st.Labels[api.LabelAgentConfigDigest]), zap.Int("revision", r.Revision))
	return api.KeepAgentResult{Applied: true, Revision: r.Revision, Digest: in.Digest}, nil
}

// agentChart is a chart whose one template prints the manifests as they are: they sit in the chart's
// files, which Helm does not template, so nothing in them is read as a template action.
func agentChart(manifests string) *chart.Chart {
	sum := sha256.Sum256([]byte(manifests))
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: api.AgentReleaseName,
			Version: "0.0.0+" + hex.EncodeToString(sum[:6]), Description: "the flotilla-agent, kept by Flotilla"},
		Templates: []*chart.File{{Name: "templates/agent.yaml", Data: []byte(`{{ .Files.Get "agent.yaml" }}`)}},
		Files:     []*chart.File{{Name: "agent.yaml", Data: []byte(manifests)}},
	}
}
