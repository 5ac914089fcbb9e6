package chaos

import (
	"context"
)

// victim is a kind of process the killer may choose; a kind with several processes (the workers, the API
// servers, the agents) holds one victim per process in instances, so each kind is as likely as any other
// whatever its count.
type victim struct {
	kind, name string
	kill       func() error
	start      func(context.Context) error
	instances  []*victim
}

func (k *soak) fleetVictims() []*victim {
	s := k.s
	workers := &victim{kind: "worker", instances: []*victim{
		{kind: "worker", name: "worker one",
			kill:  func() error { w := s.Worker; s.Worker = nil; return w.Kill() },
			start: func(context.Context) error { s.StartWorker(); return nil }},
		{kind: "worker", name: "worker two",
			kill:  func() error { return k.other.Kill() },
			start: func(context.Context) error { k.other = s.StartOtherWorker("two"); return nil }},
	}}
	temporal := &victim{kind: "temporal", name: "Temporal server",
		kill:  s.Temporal.Kill,
		start: s.Temporal.StartAgain}
	apiservers := &victim{kind: "apiserver"}
	agents := &victim{kind: "agent"}
	for _, c := range k.clusters {
		apiservers.instances = append(apiservers.instances, &victim{kind: "apiserver", name: "API server of " + c.Name,
			kill:  func() error { return s.K8s.StopAPIServer(c.Name) },
			start: func(ctx context.Context) error { return s.K8s.StartAPIServer(ctx, c.Name) }})
		if c.Agent {
			agents.instances = append(agents.instances, &victim{kind: "agent", name: "agent of " + c.Name,
				kill:  func() error { return k.agents[c.Name].Kill() },
				start: func(context.Context) error { k.agents[c.Name] = s.StartAgent(c.Name, c.Name); return nil }})
		}
	}
	git := &victim{kind: "git", name: "git server",
		kill:  func() error { return k.git.proc.Kill() },
		start: func(ctx context.Context) error { return k.git.serve(ctx, k.git.cfg.Root) }}
	charts := &victim{kind: "chartrepo", name: "chart repository",
		kill:  func() error { return k.charts.proc.Kill() },
		start: k.charts.serve}
	out := []*victim{workers, temporal, apiservers, git, charts}
	if len(agents.instances) > 0 {
		out = append(out, agents)
	}
	return out
}
