package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

func addOutputFlag(cmd *cobra.Command, g *globals) {
	cmd.Flags().StringVarP(&g.output, "output", "o", "table", "output format: table, json or yaml")
}

func tabWriter(w io.Writer) *printersTabWriter {
	return &printersTabWriter{printers.GetNewTabWriter(w)}
}

// printersTabWriter is cli-runtime's tab writer, the one kubectl uses for its tables.
type printersTabWriter struct {
	w interface {
		Flush() error
		io.Writer
	}
}

func (p *printersTabWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *printersTabWriter) Flush() error                { return p.w.Flush() }

func printStructured(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	default:
		return &exitError{code: 2, err: fmt.Errorf("-o %q: want table, json or yaml", format)}
	}
}
