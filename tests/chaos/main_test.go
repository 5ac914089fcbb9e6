package chaos

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/gitserver"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

// gitServerEnv, when set, makes the test binary the soak's git server instead of running tests: the killer
// needs the git server to be a process of its own, and the test rig's server is Go code.
const gitServerEnv = "FLOTILLA_CHAOS_GIT_SERVER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(gitServerEnv); dir != "" {
		if err := serveGit(dir); err != nil {
			fmt.Fprintln(os.Stderr, "git server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveGit serves the repositories of dir/repos over HTTPS at the address in dir/addr, with the
// certificate in dir (testpki.WriteFiles) and the account in dir/account, until SIGTERM.
func serveGit(dir string) error {
	cfg, err := loadGitServerConfig(dir)
	if err != nil {
		return err
	}
	pki, err := testpki.Load(dir)
	if err != nil {
		return err
	}
	srv, err := gitserver.StartHTTPSWith(gitserver.HTTPSOptions{Addr: cfg.Addr, Root: cfg.Root, Username: cfg.Username,
		Password: cfg.Password, PKI: pki})
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	return srv.Close()
}
