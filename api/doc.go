// Package api is Flotilla's contract: everything that crosses a process boundary between the CLI, the
// webhook, the worker's workflows and activities, and Temporal's history. It names the task queue, the
// workflow types and IDs, the activities, signals, queries and updates, the search attributes, the labels
// Flotilla stamps on releases and the error types and release actions, and it holds the payloads that
// travel under those names.
//
// Recorded histories and `flotilla status -o json` hold these payloads: a JSON spelling never changes, a
// field is only ever added (testdata/payloads.txt pins them). Names are plain strings, so a workflow can
// call an activity by name without importing the code that runs it.
//
// The package is a leaf that does no I/O: it imports the standard library and fleet (Fleet's document
// types) only, never Helm, client-go, go-git, gRPC or the Temporal SDK, so a program that only talks to
// Flotilla (the CLI, the webhook) does not link the worker.
package api
