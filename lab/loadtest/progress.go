package loadtest

import (
	"fmt"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is the bar of one run on Config.Progress: it moves with time (a
// phase lasts Duration at most). A nil *progress draws nothing.
type progress struct {
	bar   *progressbar.ProgressBar
	per   time.Duration // one phase
	count int

	mu    sync.Mutex
	done  int       // phases finished before the current one
	since time.Time // when the current phase started spending
	label string    // the current phase, "name i/count"
	ready bool      // the current phase is spending, no longer setting up

	stop chan struct{}
	wg   sync.WaitGroup
}

// startProgress draws a bar on cfg.Progress, or returns nil when it is nil.
func startProgress(cfg Config) *progress {
	if cfg.Progress == nil {
		return nil
	}
	p := &progress{per: cfg.Duration, count: len(cfg.plan()), since: time.Now(), label: "start", stop: make(chan struct{})}
	p.bar = progressbar.NewOptions64(int64(p.count)*p.per.Milliseconds(),
		progressbar.OptionSetWriter(cfg.Progress),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	p.wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				at := time.Duration(p.done) * p.per
				if p.ready {
					at += min(time.Since(p.since), p.per)
				}
				p.mu.Unlock()
				_ = p.bar.Set64(at.Milliseconds())
			}
		}
	})
	return p
}

// phase says that phase i (from 0), name ("fair", or "fair at 8
// workers"), starts now: first its set-up.
func (p *progress) phase(i int, name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.done, p.ready = i, false
	p.label = fmt.Sprintf("%-9s %d/%d", name, i+1, p.count)
	p.mu.Unlock()
	p.bar.Describe(p.label)
}

// setup says that n of the wallets are set up: a million take a while.
func (p *progress) setup(n, of int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	label := p.label
	p.mu.Unlock()
	p.bar.Describe(fmt.Sprintf("%s: setting up wallets %d%%", label, 100*n/of))
}

// spending says that the current phase's spends start now.
func (p *progress) spending() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.since, p.ready = time.Now(), true
	label := p.label
	p.mu.Unlock()
	p.bar.Describe(label)
}

// finish stops the bar and clears its line.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	_ = p.bar.Finish()
}
