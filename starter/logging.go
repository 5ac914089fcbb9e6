package main

import (
	"io"
	"log/slog"
)

// discardLogger silences the SDK's informational logs: the CLI speaks through its output and errors only.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
