package workflows

import (
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// Temporal's limits per workflow execution (docs.temporal.io/workflow-execution/limits), and the half of
// each that a GitRepo must stay under.
const (
	limitPayloadBytes    = 2 << 20
	limitHistoryEvents   = 51200
	limitHistoryBytes    = 50 << 20
	limitPendingSignals  = 2000
	limitPendingChildren = 2000
	limitPendingActivity = 2000
)

// limitsProbe watches GitRepo runs in the SDK's test environment and counts what each asks of Temporal:
// every payload it hands over, the commands it issues and the events it receives, from which it bounds the
// run's history from above (each command and each event it receives as its own workflow task: the server
// batches, so a real history is shorter). It tells the run its history length as the server would, so the
// run continues as new when it would on a real server.
type limitsProbe struct {
	env *testsuite.TestWorkflowEnvironment
	run runCounts
	// worst of every run so far
	maxEvents, maxBytes                                       int
	maxPendingSignals, maxPendingChildren, maxPendingActivity int
	// largest payload of any kind, and its type
	maxPayload     int
	maxPayloadType string
	// received, when set, is told of every signal a GitRepo run takes.
	received func(signal string, arg *commonpb.Payloads)
	// fleet stands in for the cluster workflows: the runs' child starts and signals go to it.
	fleet simulatedFleet
}

// simulatedFleet answers for the cluster workflows of GitRepo runs, which then cost the test environment
// no workflow of their own: a run of 10,000 real ones takes minutes, this takes seconds.
type simulatedFleet interface {
	// started is a child cluster workflow started with in.
	started(in api.ClusterWorkflowInput)
	// signaled is a signal to a cluster workflow; an error says it does not run.
	signaled(workflowID, signal string, arg any) error
}

type runCounts struct {
	events, bytes                 int
	signals, children, activities int // pending now
	ended                         bool
}

func newLimitsProbe(env *testsuite.TestWorkflowEnvironment) *limitsProbe {
	return &limitsProbe{env: env}
}

// newRun starts counting a new GitRepo run.
func (p *limitsProbe) newRun() {
	p.run = runCounts{events: 3} // started, and its first workflow task
	p.env.SetCurrentHistoryLength(p.run.events)
}

func (p *limitsProbe) String() string {
	return fmt.Sprintf("history ≤ %d events, ≤ %d KB; pending ≤ %d signals, %d children, %d activities; largest payload %d KB (%s)",
		p.maxEvents, p.maxBytes>>10, p.maxPendingSignals, p.maxPendingChildren, p.maxPendingActivity, p.maxPayload>>10, p.maxPayloadType)
}

// event counts n history events of payload bytes, each as its own workflow task when wakes.
func (p *limitsProbe) event(n int, bytes int, wakes bool) {
	p.run.events += n
	if wakes {
		p.run.events += 3
	}
	p.run.bytes += bytes + 200*n // an event's own fields, generously
	p.maxEvents, p.maxBytes = max(p.maxEvents, p.run.events), max(p.maxBytes, p.run.bytes)
	p.env.SetCurrentHistoryLength(p.run.events)
}

func (p *limitsProbe) payload(v any) int {
	ps, err := converter.GetDefaultDataConverter().ToPayloads(v)
	if err != nil {
		return 0
	}
	n := 0
	for _, pl := range ps.Payloads {
		n += pl.Size()
	}
	if n > p.maxPayload {
		p.maxPayload, p.maxPayloadType = n, fmt.Sprintf("%T", v)
	}
	return n
}

func (p *limitsProbe) pending() {
	p.maxPendingSignals = max(p.maxPendingSignals, p.run.signals)
	p.maxPendingChildren = max(p.maxPendingChildren, p.run.children)
	p.maxPendingActivity = max(p.maxPendingActivity, p.run.activities)
}

func (p *limitsProbe) interceptor() interceptor.WorkerInterceptor { return &probeWorker{p: p} }

type probeWorker struct {
	interceptor.WorkerInterceptorBase
	p *limitsProbe
}

// InterceptWorkflow watches GitRepo workflows only; the cluster workflows are the test's stand-ins.
func (w *probeWorker) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	if workflow.GetInfo(ctx).WorkflowType.Name != api.GitRepoWorkflowType {
		return next
	}
	return &probeInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, p: w.p}
}

type probeInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	p *limitsProbe
}

func (in *probeInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return in.Next.Init(&probeOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, p: in.p})
}

func (in *probeInbound) ExecuteWorkflow(ctx workflow.Context, req *interceptor.ExecuteWorkflowInput) (any, error) {
	in.p.newRun()
	for _, a := range req.Args {
		in.p.run.bytes += in.p.payload(a)
	}
	res, err := in.Next.ExecuteWorkflow(ctx, req)
	in.p.run.ended = true // a signal taken after this is lost with the run: the server would not have let it end
	if can, ok := err.(*workflow.ContinueAsNewError); ok {
		n := 0
		for _, pl := range can.Input.GetPayloads() {
			n += pl.Size()
		}
		if n > in.p.maxPayload {
			in.p.maxPayload, in.p.maxPayloadType = n, "continue-as-new input"
		}
		in.p.event(1, n, false)
	}
	return res, err
}

func (in *probeInbound) HandleSignal(ctx workflow.Context, req *interceptor.HandleSignalInput) error {
	n := 0
	if req.Arg != nil {
		n = payloadsSize(req.Arg)
	}
	in.p.event(1, n, true)
	if in.p.received != nil && !in.p.run.ended {
		in.p.received(req.SignalName, req.Arg)
	}
	return in.Next.HandleSignal(ctx, req)
}

func payloadsSize(ps *commonpb.Payloads) int {
	n := 0
	for _, pl := range ps.GetPayloads() {
		n += pl.Size()
	}
	return n
}

type probeOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	p           *limitsProbe
	unconfirmed []func()
	confirming  bool
}

// settle counts a pending command down once its future resolves.
func (out *probeOutbound) settle(ctx workflow.Context, f workflow.Future, pending *int, events int) {
	out.Next.Go(ctx, "limits-probe", func(ctx workflow.Context) {
		_ = f.Get(ctx, nil)
		*pending--
		out.p.event(events, 0, true)
	})
}

func (out *probeOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	n := 0
	for _, a := range args {
		n += out.p.payload(a)
	}
	out.p.event(2, n, false) // scheduled, started
	out.p.run.activities++
	out.p.pending()
	f := out.Next.ExecuteActivity(ctx, activityType, args...)
	out.Next.Go(ctx, "limits-probe", func(ctx workflow.Context) {
		var result any
		switch activityType {
		case api.ActivityPlan:
			var plan api.Plan
			_ = f.Get(ctx, &plan)
			result = plan
		default:
			_ = f.Get(ctx, nil)
		}
		out.p.run.activities--
		out.p.event(1, out.p.payload(result), true) // completed
	})
	return f
}

func (out *probeOutbound) ExecuteChildWorkflow(ctx workflow.Context, childWorkflowType string, args ...any) workflow.ChildWorkflowFuture {
	n := 0
	for _, a := range args {
		n += out.p.payload(a)
	}
	out.p.event(1, n, false) // initiated
	out.p.run.children++
	out.p.pending()
	if out.p.fleet != nil && childWorkflowType == api.ClusterWorkflowType {
		out.p.fleet.started(args[0].(api.ClusterWorkflowInput))
		out.p.event(1, 0, true) // started; it runs on, so it stays pending for the rest of the run
		done, _ := workflow.NewFuture(ctx)
		started, setStarted := workflow.NewFuture(ctx)
		setStarted.Set(workflow.Execution{}, nil)
		return simulatedChild{Future: done, started: started}
	}
	f := out.Next.ExecuteChildWorkflow(ctx, childWorkflowType, args...)
	out.Next.Go(ctx, "limits-probe", func(ctx workflow.Context) {
		_ = f.GetChildWorkflowExecution().Get(ctx, nil)
		out.p.event(1, 0, true) // started
	})
	out.settle(ctx, f, &out.p.run.children, 1) // closed
	return f
}

func (out *probeOutbound) SignalExternalWorkflow(ctx workflow.Context, workflowID, runID, signalName string, arg any) workflow.Future {
	out.p.event(1, out.p.payload(arg), false) // initiated
	out.p.run.signals++
	out.p.pending()
	if out.p.fleet != nil {
		f, set := workflow.NewFuture(ctx)
		err := out.p.fleet.signaled(workflowID, signalName, arg)
		out.confirmLater(ctx, func() {
			set.Set(nil, err)
			out.p.run.signals--
			out.p.event(1, 0, true) // signaled
		})
		return f
	}
	f := out.Next.SignalExternalWorkflow(ctx, workflowID, runID, signalName, arg)
	out.settle(ctx, f, &out.p.run.signals, 1) // signaled
	return f
}

// confirmLater confirms a simulated signal in a later workflow task, as the server does, so reports sent
// meanwhile reach the run first; one coroutine confirms every signal sent in a task, as a test
// environment slows with each coroutine it keeps.
func (out *probeOutbound) confirmLater(ctx workflow.Context, confirm func()) {
	out.unconfirmed = append(out.unconfirmed, confirm)
	if out.confirming {
		return
	}
	out.confirming = true
	out.Next.Go(ctx, "signals-confirmed", func(ctx workflow.Context) {
		for {
			_ = out.Next.Await(ctx, func() bool { return len(out.unconfirmed) > 0 })
			_ = out.Next.Sleep(ctx, time.Millisecond)
			batch := out.unconfirmed
			out.unconfirmed = nil
			for _, c := range batch {
				c()
			}
		}
	})
}

func (out *probeOutbound) NewTimer(ctx workflow.Context, d time.Duration) workflow.Future {
	return out.timer(out.Next.NewTimer(ctx, d), ctx)
}

func (out *probeOutbound) NewTimerWithOptions(ctx workflow.Context, d time.Duration, o workflow.TimerOptions) workflow.Future {
	return out.timer(out.Next.NewTimerWithOptions(ctx, d, o), ctx)
}

// timer counts a timer started, and fired or cancelled.
func (out *probeOutbound) timer(f workflow.Future, _ workflow.Context) workflow.Future {
	out.p.event(2, 0, true) // started, then fired or cancelled
	return f
}

func (out *probeOutbound) UpsertMemo(ctx workflow.Context, memo map[string]any) error {
	out.p.event(1, out.p.payload(memo), false)
	return out.Next.UpsertMemo(ctx, memo)
}

func (out *probeOutbound) UpsertTypedSearchAttributes(ctx workflow.Context, attrs ...temporal.SearchAttributeUpdate) error {
	out.p.event(1, 200, false)
	return out.Next.UpsertTypedSearchAttributes(ctx, attrs...)
}

// simulatedChild is a child the simulated fleet runs: started at once, never ending within the run.
type simulatedChild struct {
	workflow.Future
	started workflow.Future
}

func (c simulatedChild) GetChildWorkflowExecution() workflow.Future { return c.started }

func (c simulatedChild) SignalChildWorkflow(ctx workflow.Context, _ string, _ any) workflow.Future {
	f, set := workflow.NewFuture(ctx)
	set.Set(nil, nil)
	return f
}
