package chartcheck

import (
	"container/list"
	"sync"
)

// outcomes is a bounded LRU of checks already made: a key maps to nil (the chart passed) or to the
// LimitError it was refused with.
type outcomes struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recently used
	items map[[32]byte]*list.Element
}

type outcome struct {
	key [32]byte
	err error
}

func newOutcomes(max int) *outcomes {
	return &outcomes{max: max, order: list.New(), items: map[[32]byte]*list.Element{}}
}

func (o *outcomes) get(key [32]byte) (err error, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.items[key]
	if !ok {
		return nil, false
	}
	o.order.MoveToFront(e)
	return e.Value.(outcome).err, true
}

func (o *outcomes) put(key [32]byte, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.items[key]; ok {
		e.Value = outcome{key, err}
		o.order.MoveToFront(e)
		return
	}
	o.items[key] = o.order.PushFront(outcome{key, err})
	for o.order.Len() > o.max {
		last := o.order.Back()
		o.order.Remove(last)
		delete(o.items, last.Value.(outcome).key)
	}
}

func (o *outcomes) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.order.Len()
}
