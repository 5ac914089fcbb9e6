package api

import "time"

// A cluster workflow remembers its last deployments (HistoryLength of them) in its own state, carried
// across continue-as-new: `flotilla history` reads them through QueryHistory, with no second store.

const (
	// QueryHistory answers a cluster workflow's last deployments, oldest first ([]Deployment).
	QueryHistory = "history"
	// HistoryLength is how many deployments a cluster workflow remembers.
	HistoryLength = 100
)

// Deployment is one Apply on one cluster: the bundles it installed, upgraded or rolled back, and how each
// went. The same failure repeated (an apply retried with backoff) is one deployment with Attempts counted.
type Deployment struct {
	// At is when the apply started; Seconds how long it took (the last attempt's).
	At      time.Time `json:"at"`
	Seconds float64   `json:"seconds"`
	// Commit is the commit the cluster was handed.
	Commit  string           `json:"commit"`
	Bundles []DeployedBundle `json:"bundles"`
	// Error is set when the apply did not run at all (the cluster could not be reached).
	Error    string `json:"error,omitempty"`
	Attempts int    `json:"attempts"`
}

// DeployedBundle is one bundle's part of a deployment.
type DeployedBundle struct {
	Bundle       string `json:"bundle"`
	Action       Action `json:"action"`
	ChartVersion string `json:"chartVersion,omitempty"`
	// Revision is the Helm revision the apply made; 0 when it failed.
	Revision int    `json:"revision,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Failed says whether any part of the deployment failed.
func (d Deployment) Failed() bool {
	if d.Error != "" {
		return true
	}
	for _, b := range d.Bundles {
		if b.Error != "" {
			return true
		}
	}
	return false
}
