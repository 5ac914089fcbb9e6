package render

import (
	"encoding/json"
	"fmt"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// summaryVersion is the version of releaseFields' encoding, in summaries and packages alike: a reader
// refuses a version it does not know instead of guessing at fields it would miss.
const summaryVersion = 1

// releaseFields are a Release without its chart, values and post-renderer: what a check needs, and small
// enough to travel in every check's payload.
type releaseFields struct {
	Bundle          string                        `json:"bundle"`
	Name            string                        `json:"name"`
	Namespace       string                        `json:"namespace"`
	Options         fleet.BundleDeploymentOptions `json:"options"`
	Customization   string                        `json:"customization,omitempty"`
	Deploy          bool                          `json:"deploy,omitempty"`
	Paused          bool                          `json:"paused,omitempty"`
	SyncGeneration  int64                         `json:"syncGeneration,omitempty"`
	DeleteNamespace bool                          `json:"deleteNamespace,omitempty"`
	ForcedNamespace string                        `json:"forcedNamespace,omitempty"`
	DeploymentID    string                        `json:"deploymentID,omitempty"`
	ValuesFrom      []ValuesSource                `json:"valuesFrom,omitempty"`
	ChartLocks      []api.ChartLock               `json:"chartLocks,omitempty"`
	RemoteChart     *api.ChartLock                `json:"remoteChart,omitempty"`
	ObjectLabels    map[string]string             `json:"objectLabels,omitempty"`
}

func fieldsOf(rel *Release) releaseFields {
	return releaseFields{Bundle: rel.Bundle, Name: rel.Name, Namespace: rel.Namespace, Options: rel.Options,
		Customization: rel.Customization, Deploy: rel.Deploy, Paused: rel.Paused, SyncGeneration: rel.SyncGeneration,
		DeleteNamespace: rel.DeleteNamespace, ForcedNamespace: rel.ForcedNamespace, DeploymentID: rel.DeploymentID,
		ValuesFrom: rel.ValuesFrom, ChartLocks: rel.ChartLocks, RemoteChart: rel.RemoteChart, ObjectLabels: rel.ObjectLabels}
}

func (f releaseFields) release() *Release {
	return &Release{Bundle: f.Bundle, Name: f.Name, Namespace: f.Namespace, Options: f.Options,
		Customization: f.Customization, Deploy: f.Deploy, Paused: f.Paused, SyncGeneration: f.SyncGeneration,
		DeleteNamespace: f.DeleteNamespace, ForcedNamespace: f.ForcedNamespace, DeploymentID: f.DeploymentID,
		ValuesFrom: f.ValuesFrom, ChartLocks: f.ChartLocks, RemoteChart: f.RemoteChart, ObjectLabels: f.ObjectLabels}
}

type summary struct {
	V int `json:"v"`
	releaseFields
}

// MarshalSummary is the release without its chart, values and post-renderer, as JSON: what an observe
// needs (api.PreparedBundle.Release). The fleet.yaml helm values are left out of its options too: they
// can be as large as the chart's, and were already rendered into Values.
func (rel *Release) MarshalSummary() ([]byte, error) {
	f := fieldsOf(rel)
	if h := f.Options.Helm; h != nil {
		light := *h
		light.Values, light.TemplateValues = nil, nil
		f.Options.Helm = &light
	}
	data, err := json.Marshal(summary{V: summaryVersion, releaseFields: f})
	if err != nil {
		return nil, fmt.Errorf("bundle %q: summary: %w", rel.Bundle, err)
	}
	return data, nil
}

// UnmarshalSummary is a release as MarshalSummary wrote it: its Chart, Values and PostRenderer are nil.
func UnmarshalSummary(data []byte) (*Release, error) {
	var s summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("release summary: %w", err)
	}
	if s.V != summaryVersion {
		return nil, fmt.Errorf("bundle %q: release summary version %d is not known here (version %d is): "+
			"the management worker and the agent run different Flotilla versions", s.Bundle, s.V, summaryVersion)
	}
	return s.release(), nil
}
