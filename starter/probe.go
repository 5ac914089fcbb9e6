package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newProbeCmd is the healthcheck of Flotilla's image, which has no shell or curl: it asks a worker's or
// an agent's /healthz (served with --metrics-listen) and fails unless the answer is 2xx.
func newProbeCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe URL",
		Short: "Exit 0 if URL answers 2xx within --timeout (a container healthcheck: flotilla probe http://127.0.0.1:9090/healthz)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
			if err != nil {
				return fmt.Errorf("probe %s: %w", args[0], err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("probe: %w", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			if resp.StatusCode/100 != 2 {
				return fmt.Errorf("probe %s: %s: %s", args[0], resp.Status, strings.TrimSpace(string(body)))
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}
