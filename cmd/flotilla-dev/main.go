// Command flotilla-dev runs the local Flotilla stack: `flotilla-dev up` (make up), `flotilla-dev down`
// (make down), and `flotilla-dev chart-repo publish NAME VERSION`, which publishes a chart to the Helm
// repository `make up` started.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/flotilla-gitops/flotilla/internal/envdefault"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
)

const usage = `usage: flotilla-dev up|down                          (state in $FLOTILLA_DEV_DIR, default ./.run)
       flotilla-dev chart-repo publish NAME VERSION    (a small chart, into the chart repository of make up)`

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		fail(2, usage)
	}
	root, err := os.Getwd()
	if err != nil {
		fail(1, err)
	}
	dir := envdefault.Or("FLOTILLA_DEV_DIR", filepath.Join(root, ".run"))
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	switch {
	case len(args) == 1 && args[0] == "up":
		err = devenv.Up(ctx, devenv.Options{Root: root, Dir: dir})
	case len(args) == 1 && args[0] == "down":
		err = devenv.Down(dir, os.Stdout)
	case len(args) == 4 && args[0] == "chart-repo" && args[1] == "publish":
		err = publish(filepath.Join(dir, "chart-repo"), args[2], args[3])
	case len(args) >= 2 && args[0] == "chart-repo" && args[1] == "serve":
		// Not in the usage: `make up` runs it as its own process, so it outlives `make up` as the clusters do.
		err = serve(ctx, args[2:])
	default:
		fail(2, usage)
	}
	if err != nil {
		fail(1, "flotilla-dev: ", err)
	}
}

func publish(dir, name, version string) error {
	repo, err := devenv.LoadChartRepo(dir)
	if err != nil {
		return err
	}
	p, err := repo.Publish(name, version)
	if err != nil {
		return err
	}
	fmt.Printf("published %s %s (%s) at %s%s\n", p.Name, p.Version, p.Digest, repo.URL, p.Path)
	fmt.Println("a GitRepo whose version constraint accepts it deploys it at its next poll: bin/flotilla status example -o yaml | grep chartVersion")
	return nil
}

func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("chart-repo serve", flag.ContinueOnError)
	dir := fs.String("dir", "", "the repository's folder, laid out by make up")
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	if *dir == "" || fs.NArg() != 0 {
		fail(2, "usage: flotilla-dev chart-repo serve --dir DIR")
	}
	repo, err := devenv.LoadChartRepo(*dir)
	if err != nil {
		return err
	}
	return repo.Serve(ctx, os.Stdout)
}

func fail(code int, msg ...any) {
	fmt.Fprint(os.Stderr, msg...)
	fmt.Fprintln(os.Stderr)
	os.Exit(code)
}
