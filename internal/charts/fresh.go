package charts

import (
	"context"
	"time"
)

type freshSinceKey struct{}

// FreshSince makes the index.yaml and tag lists read under ctx at least as new as t: a memo checked
// before t is revalidated (a conditional GET) even within IndexTTL, and reads under ctx share no request
// sent before. A GitRepo's successive plans may run on different workers, each with its own memos; with
// the moment a plan locks its charts as t (after its own start, so after the plan before it ended), a
// version constraint never resolves to an older version than the plan before it saw, which a memo
// another worker had not refreshed yet would give.
func FreshSince(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, freshSinceKey{}, t)
}

func freshSince(ctx context.Context) time.Time {
	t, _ := ctx.Value(freshSinceKey{}).(time.Time)
	return t
}

// fresh reports whether a memo checked at checked may answer a read under ctx.
func (f *Fetcher) fresh(ctx context.Context, checked time.Time) bool {
	return f.now().Sub(checked) < f.indexTTL() && !checked.Before(freshSince(ctx))
}

// flightKey keeps reads that must be fresh since different times from sharing one request.
func flightKey(ctx context.Context, key string) string {
	if t := freshSince(ctx); !t.IsZero() {
		return key + "\x00" + t.Format(time.RFC3339Nano)
	}
	return key
}
