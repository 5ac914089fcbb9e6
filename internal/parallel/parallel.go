// Package parallel runs a bounded number of calls at once: the worker's bundles on one cluster and the
// benchmark's direct baseline share it, so both apply with the same concurrency.
package parallel

import "sync"

// ForEach calls fn(0) … fn(n-1) with at most limit calls running at once and returns the first error.
// Every call runs even when one fails: one bundle failing must never hide the others' outcomes.
func ForEach(n, limit int, fn func(i int) error) error {
	if limit <= 0 {
		limit = 1
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	return first
}
