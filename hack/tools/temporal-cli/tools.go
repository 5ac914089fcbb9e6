//go:build tools

// Package tools pins the Temporal CLI that hack/build-tools.sh builds, with a newer SQLite driver than
// the CLI's own: modernc.org/sqlite before v1.44.3 can leave its connection interrupted for good after a
// context is cancelled mid-statement, and the dev server's in-memory database has one connection, so on a
// loaded machine every request then failed with "interrupted (9)" and the namespaces were gone.
package tools

import _ "github.com/temporalio/cli/cmd/temporal"
