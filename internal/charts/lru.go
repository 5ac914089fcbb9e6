package charts

import (
	"container/list"
	"sync"
)

// sizedLRU keeps values by key up to a total size, dropping the least recently used first. A value
// larger than the whole budget is not kept.
type sizedLRU[V any] struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // of *sizedItem[V], most recent first
	items map[string]*list.Element
}

type sizedItem[V any] struct {
	key   string
	value V
	size  int64
}

func newSizedLRU[V any](max int64) *sizedLRU[V] {
	return &sizedLRU[V]{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (l *sizedLRU[V]) get(key string) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*sizedItem[V]).value, true
}

func (l *sizedLRU[V]) put(key string, value V, size int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.items[key]; ok {
		l.size -= e.Value.(*sizedItem[V]).size
		l.order.Remove(e)
		delete(l.items, key)
	}
	if size > l.max {
		return
	}
	l.items[key] = l.order.PushFront(&sizedItem[V]{key: key, value: value, size: size})
	l.size += size
	for l.size > l.max {
		last := l.order.Back()
		item := last.Value.(*sizedItem[V])
		l.order.Remove(last)
		delete(l.items, item.key)
		l.size -= item.size
	}
}

// len is how many values are kept.
func (l *sizedLRU[V]) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.items)
}
