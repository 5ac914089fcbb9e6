package webhook

import (
	"container/list"
	"sync"
	"time"
)

const (
	// replayMemory is how many handled deliveries are remembered, each by up to two keys of under 100
	// bytes: well under a MiB. A busier hook forgets its oldest deliveries early, and a redelivery of one
	// of those syncs again, which costs one ls-remote per GitRepo.
	replayMemory = 4096
	// replayWindow is how long a handled delivery is remembered: GitLab retries a failed delivery for
	// hours, and both providers let a user redeliver from their recent-deliveries pages.
	replayWindow = 24 * time.Hour
)

// admission is what the memory says about a delivery.
type admission int

const (
	admitted   admission = iota // new: handle it, then call done
	duplicate                   // already handled: do not sync again
	inProgress                  // being handled by another request now
)

// deliveries remembers the deliveries that were handled, by their keys, for replayWindow and at most
// replayMemory keys, oldest forgotten first. Keys being handled are held too, so that a redelivery racing
// its original does not sync twice.
type deliveries struct {
	mu    sync.Mutex
	now   func() time.Time
	order *list.List // of *delivery, oldest first
	byKey map[string]*list.Element
}

type delivery struct {
	key     string
	at      time.Time
	handled bool
}

func newDeliveries(now func() time.Time) *deliveries {
	return &deliveries{now: now, order: list.New(), byKey: map[string]*list.Element{}}
}

// admit reports whether a delivery known by keys is new; a new one holds its keys until done.
func (d *deliveries) admit(keys []string) admission {
	if len(keys) == 0 {
		return admitted
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.forgetExpired()
	for _, k := range keys {
		if e, ok := d.byKey[k]; ok {
			if e.Value.(*delivery).handled {
				return duplicate
			}
			return inProgress
		}
	}
	for _, k := range keys {
		for d.order.Len() >= replayMemory {
			d.forget(d.order.Front())
		}
		d.byKey[k] = d.order.PushBack(&delivery{key: k, at: d.now()})
	}
	return admitted
}

// done releases the keys of an admitted delivery and, when it was handled, remembers them from now on.
// A delivery that was not handled (a GitRepo could not be signalled) is forgotten so its redelivery runs.
func (d *deliveries) done(keys []string, handled bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range keys {
		e, ok := d.byKey[k]
		if !ok {
			continue // evicted meanwhile by a burst of newer deliveries
		}
		if !handled {
			d.forget(e)
			continue
		}
		e.Value.(*delivery).handled = true
		e.Value.(*delivery).at = d.now()
		d.order.MoveToBack(e)
	}
}

func (d *deliveries) forgetExpired() {
	cutoff := d.now().Add(-replayWindow)
	for e := d.order.Front(); e != nil && !e.Value.(*delivery).at.After(cutoff); e = d.order.Front() {
		d.forget(e)
	}
}

func (d *deliveries) forget(e *list.Element) {
	delete(d.byKey, e.Value.(*delivery).key)
	d.order.Remove(e)
}

func (d *deliveries) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.order.Len()
}
