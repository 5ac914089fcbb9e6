package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/tempdev"
)

// Main runs a test binary's tests with one Temporal dev server shared by every stack that may share it,
// each stack in a Temporal namespace of its own, and stops the server when the tests end. Call it from
// TestMain. Without it every stack starts a dev server of its own, as one with Options.OwnTemporal does.
//
// Scenarios share the server and not their namespaces: workflow IDs, task queues, search attributes and
// visibility queries are all per namespace, so one scenario never sees another's workflows, and the
// server's start and idle load (a quarter of a CPU-second to start and 3 % of a core while it runs,
// measured on one) are paid once rather than once per scenario.
func Main(m *testing.M) int {
	shared.enabled = true
	code := m.Run()
	if code != 0 {
		shared.printLog(os.Stderr)
	}
	shared.stop()
	return code
}

// sharedNamespaces is how many stacks can share the server; the ones after them start their own (a run
// with -count=2, say). Registered at the server's start, a namespace is usable at once: one created later
// waits for the server's namespace cache to refresh.
const sharedNamespaces = 80

var shared sharedServer

type sharedServer struct {
	enabled bool
	once    sync.Once
	srv     *tempdev.Server
	dir     string
	err     error

	mu    sync.Mutex
	taken int
}

func sharedNamespace(i int) string { return fmt.Sprintf("scenario-%02d", i) }

// take starts the server on first use and hands out a namespace no other stack has had; ok is false when
// the stack is to start its own server (no Main, or every namespace handed out).
func (sh *sharedServer) take(ctx context.Context) (srv *tempdev.Server, namespace string, ok bool, err error) {
	if !sh.enabled {
		return nil, "", false, nil
	}
	sh.mu.Lock()
	if sh.taken == sharedNamespaces {
		sh.mu.Unlock()
		return nil, "", false, nil
	}
	sh.taken++
	namespace = sharedNamespace(sh.taken)
	sh.mu.Unlock()
	sh.once.Do(func() { sh.srv, sh.dir, sh.err = startShared(ctx) })
	return sh.srv, namespace, sh.err == nil, sh.err
}

func startShared(ctx context.Context) (*tempdev.Server, string, error) {
	dir, err := os.MkdirTemp("", "flotilla-shared-temporal-")
	if err != nil {
		return nil, "", err
	}
	namespaces := make([]string, sharedNamespaces)
	for i := range namespaces {
		namespaces[i] = sharedNamespace(i + 1)
	}
	// In memory: every scenario's requests go through the server's one SQLite connection, and with a file
	// each commit waits on a disk that other work on the machine may be keeping busy.
	srv, err := tempdev.Start(ctx, tempdev.Options{Bin: filepath.Join(BinDir(), "temporal"), Dir: dir, InMemory: true, MoreNamespaces: namespaces,
		SearchAttributes: api.SearchAttributes, LogFile: filepath.Join(dir, "temporal.log")})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("the shared Temporal dev server: %w", err)
	}
	return srv, dir, nil
}

// printLog prints the end of the shared server's log (warnings and errors only): a stall or an error of the
// server shows in every scenario it served at once, and only its log tells which.
func (sh *sharedServer) printLog(w io.Writer) {
	if sh.dir == "" {
		return
	}
	if sh.srv != nil {
		if exited, err := sh.srv.Exited(); exited {
			fmt.Fprintf(w, "the shared Temporal dev server (pid %d) exited before the tests ended: %v\n", sh.srv.PID(), err)
		}
	}
	data, err := os.ReadFile(filepath.Join(sh.dir, "temporal.log"))
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 120 {
		lines = lines[len(lines)-120:]
	}
	fmt.Fprintf(w, "last lines of the shared Temporal dev server's log:\n%s\n", strings.Join(lines, "\n"))
}

func (sh *sharedServer) stop() {
	if sh.srv != nil {
		_ = sh.srv.Stop()
	}
	if sh.dir != "" {
		_ = os.RemoveAll(sh.dir)
	}
}

// closeNamespace ends what a scenario leaves running in its namespace of the shared server once its
// workers are gone: schedules, which the server would go on firing, and open workflows, whose timers
// would go on queueing tasks nobody takes. Best effort: a scenario that ended is not failed by it.
func (s *Stack) closeNamespace() {
	ctx, cancel := context.WithTimeout(context.Background(), Patience(30*time.Second))
	defer cancel()
	schedules, err := s.Client.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	for err == nil && schedules.HasNext() {
		var e *client.ScheduleListEntry
		if e, err = schedules.Next(); err == nil {
			err = s.Client.ScheduleClient().GetHandle(ctx, e.ID).Delete(ctx)
		}
	}
	if err != nil {
		s.t.Logf("namespace %s: deleting schedules: %v", s.namespace, err)
	}
	var token []byte
	for {
		page, err := s.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: `ExecutionStatus = "Running"`, NextPageToken: token})
		if err != nil {
			s.t.Logf("namespace %s: listing open workflows: %v", s.namespace, err)
			return
		}
		for _, e := range page.GetExecutions() {
			_ = s.Client.TerminateWorkflow(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), "the test ended")
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return
		}
	}
}

// sharedTemporal is the shared server and a namespace of it for a stack that may share (ok), or nothing
// for one that starts its own.
func sharedTemporal(ctx context.Context, o Options) (srv *tempdev.Server, namespace string, ok bool, err error) {
	if o.OwnTemporal || o.BareTemporal {
		return nil, "", false, nil
	}
	return shared.take(ctx)
}
