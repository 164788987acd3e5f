package labtest

import (
	"sync"
	"sync/atomic"
	"time"
)

// Disrupt calls hit every period, in a goroutine of its own, until the
// returned stop is called; stop waits for the last hit to end and returns
// how many there were. Tests use it to kill connections or flush scripts
// while a load runs.
func Disrupt(period time.Duration, hit func()) (stop func() int) {
	done := make(chan struct{})
	var n atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				hit()
				n.Add(1)
			}
		}
	})
	return func() int {
		close(done)
		wg.Wait()
		return int(n.Load())
	}
}
