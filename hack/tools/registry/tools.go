//go:build tools

// Package tools pins the CNCF distribution registry that the OCI chart tests run.
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
)
