// Package agentclient is the handle to one Kubernetes cluster: whatever Flotilla writes to a cluster or
// reads from it goes through a Client (Helm release actions, release observation, the live state of the
// objects a release owns). Today the worker's activities hold a Client per registered cluster and reach
// every cluster from the worker. It is also what the future pull-mode agent will run inside a member
// cluster, serving that cluster's activities from its own task queue so the worker needs no kubeconfig
// for it; that is why it knows nothing of Temporal, workflows, git or how a bundle is rendered: a Client
// is handed a chart, its values and the labels to stamp, and answers with what the cluster holds.
//
// It follows Flux helm-controller's split: cheap observation (Observe, ListReleases, History,
// CheckRelease), one method per action (Install, Upgrade, DiscardPending, Rollback, Uninstall), and error
// classification (IsUnreachable, IsInvalid) that the activities map onto retryable and non-retryable
// Temporal errors. Decisions live in the workflows.
//
// Concurrency contract: a Client serialises every mutating call on one release (namespace/name) inside
// the process. A call whose ctx ends while Helm is still working returns at once with ctx's error, but
// Helm's work is not interrupted (Helm cannot stop half-applied changes safely): it runs to the end in
// the background and the release stays locked in this process until it has, so the next call on that
// release waits and then observes the true outcome. A release left pending-* by a process that died is
// repaired with DiscardPending, which the Apply activity's recover action calls before it upgrades.
package agentclient
