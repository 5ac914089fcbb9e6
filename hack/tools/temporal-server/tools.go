//go:build tools

// Package tools pins the Temporal server and its SQL schema tool, built by hack/build-tools.sh for the
// production-topology tests (Temporal on PostgreSQL in docker-compose, a server that requires mTLS).
package tools

import (
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
