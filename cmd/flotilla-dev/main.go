// Command flotilla-dev runs the local Flotilla stack: `flotilla-dev up` (make up) and `flotilla-dev down` (make down).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/flotilla-gitops/flotilla/internal/devenv"
	"github.com/flotilla-gitops/flotilla/internal/envdefault"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "up" && os.Args[1] != "down") {
		fmt.Fprintln(os.Stderr, "usage: flotilla-dev up|down   (state in $FLOTILLA_DEV_DIR, default ./.run)")
		os.Exit(2)
	}
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir := envdefault.Or("FLOTILLA_DEV_DIR", filepath.Join(root, ".run"))
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	switch os.Args[1] {
	case "up":
		err = devenv.Up(ctx, devenv.Options{Root: root, Dir: dir})
	case "down":
		err = devenv.Down(dir, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "flotilla-dev:", err)
		os.Exit(1)
	}
}
