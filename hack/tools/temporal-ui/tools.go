//go:build tools

// Package tools pins the Temporal Web UI server, built by hack/build-tools.sh for the image the
// docker-compose tests use in place of temporalio/ui.
package tools

import _ "github.com/temporalio/ui-server/v2/cmd/server"
