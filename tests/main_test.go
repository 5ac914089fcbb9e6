package tests

import (
	"os"
	"testing"

	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// TestMain gives the scenarios one Temporal dev server, each scenario a namespace of its own on it.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
