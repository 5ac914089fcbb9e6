// Package agentclient is Flotilla's handle to one Kubernetes cluster: Helm release actions, release
// observation and resource-level status, for the Temporal activities to call.
//
// It follows Flux helm-controller's split: cheap observation (Observe, ListReleases, History,
// CheckRelease), one method per action (Install, Upgrade, DiscardPending, Rollback, Uninstall), and error
// classification (IsUnreachable, IsInvalid) that the activities map onto retryable and non-retryable
// Temporal errors. Decisions live in the workflows; nothing here imports Temporal.
//
// Concurrency contract: a Client serialises every mutating call on one release (namespace/name) inside
// the process. A call whose ctx ends while Helm is still working returns at once with ctx's error, but
// Helm's work is not interrupted (Helm cannot stop half-applied changes safely): it runs to the end in
// the background and the release stays locked in this process until it has, so the next call on that
// release waits and then observes the true outcome. A release left pending-* by a process that died is
// repaired with DiscardPending.
package agentclient
