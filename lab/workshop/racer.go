package workshop

// A laptop's side of the race (make race ROOM=...): join, build the lock
// into holder processes, and run each round the room orders. A spender is
// one holder process, which holds the lock, and a goroutine here, which
// reads and writes the wallet while its holder holds it: stopping the
// process (SIGSTOP) stops the spender between its read and its write, as
// step 5's pause does, and its lease runs out meanwhile.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/holder"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/lockbuild"
	"example.com/walletlock/lab/internal/wire"
	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
)

// acquireWait bounds one Acquire: a spender that gets no lease within it
// tries again.
const acquireWait = 3 * time.Second

// racer is one laptop in the race.
type racer struct {
	line  string
	c     Creds
	lock  string
	g     launch.Group
	relay *wire.Proxy // the holders' Redis: the room's, logged in as this laptop
	pool  *pgxpool.Pool
	store *postgres.Store
	hs    []*holder.Holder
	fence bool // the lock has AcquireFenced
	built *lockbuild.Built
}

// Race runs this laptop's part of the race of the room on the join line:
// it joins as name, builds lock (LOCK=: the folder of a package with the
// root lock's API, or mutant:NAME) into holder processes, and runs every
// round the room orders, until the race is over or ctx ends. It prints a
// line per round on stdout; the room's page has the verdicts.
func Race(ctx context.Context, line, name, lock string, stdout, stderr io.Writer) error {
	r := &racer{line: line, lock: lock}
	ask, _ := json.Marshal(map[string]string{"name": name})
	if err := call(ctx, line, "/join", ask, &r.c, nil); err != nil {
		return fmt.Errorf("join the race: %w", err)
	}
	defer r.close()
	fmt.Fprintf(stderr, "race: joined as %s; building %s into holder processes\n", r.c.Name, harness.Printable(lock))
	if err := r.start(ctx); err != nil {
		return err
	}
	writes := "plain writes (its lock has no AcquireFenced)"
	if r.fence {
		writes = "fenced writes"
	}
	fmt.Fprintf(stderr, "race: %d spenders ready, with %s; waiting for the facilitator to start a round\n", spenders, writes)
	for after := 0; ; {
		p := Plan{Round: -1}
		if err := call(ctx, line, fmt.Sprintf("/plan?after=%d", after), nil, &p, &r.c); err != nil {
			return fmt.Errorf("wait for the next round: %w", err)
		}
		switch p.Round {
		case -1: // no round yet: ask again
			continue
		case 0:
			fmt.Fprintln(stdout, "race: the race is over; the room's page has every lock's result")
			return nil
		}
		res := r.run(ctx, p)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b, _ := json.Marshal(res)
		if err := call(ctx, line, "/result", b, nil, &r.c); err != nil {
			return fmt.Errorf("report round %d: %w", p.Round, err)
		}
		told := cmp.Or(res.Verdict, "no spend lost")
		if p.Round == 2 {
			told = "the room's page tells the shared wallet"
		}
		fmt.Fprintf(stdout, "race: round %d: %d spends accepted, %d refused as stale, %d unknown, %d acquires gave up; %s\n",
			p.Round, res.Accepted, res.Refused, res.Unknown, res.NoLease, told)
		after = p.Round
	}
}

// start builds the holders, and opens the laptop's ways to the room's
// servers.
func (r *racer) start(ctx context.Context) error {
	var err error
	if r.built, err = buildHolder(ctx, r.lock); err != nil {
		return err
	}
	if r.relay, err = wire.ListenAs("127.0.0.1:0", r.c.Redis, r.c.User, r.c.Password); err != nil {
		return err
	}
	check := redis.NewClient(&redis.Options{Addr: r.relay.Addr(), MaxRetries: -1})
	err = check.Ping(ctx).Err()
	check.Close()
	if err != nil {
		return fmt.Errorf("the room's Redis at %s: %w", r.c.Redis, err)
	}
	if r.pool, err = pgxpool.New(ctx, r.c.Postgres); err != nil {
		return err
	}
	if r.store, err = postgres.Open(ctx, r.pool, ownerOf(r.c.User)); err != nil {
		return fmt.Errorf("the room's PostgreSQL: %w", err)
	}
	for i := range spenders {
		cmd := exec.CommandContext(ctx, r.built.Exe)
		cmd.Env = append(os.Environ(), holder.RedisEnv+"="+r.relay.Addr(), holder.AdapterEnv+"="+r.built.Name)
		h, err := holder.Start(&r.g, fmt.Sprintf("spender %d", i+1), cmd, nil)
		if err != nil {
			return err
		}
		r.hs = append(r.hs, h)
		a, err := h.Call(holder.Request{Op: "hello", Key: r.c.Prefix + "hello", TTL: 1000}, 15*time.Second)
		if err != nil || !a.OK {
			return fmt.Errorf("the lock's holder did not start: %v%s", err, a.Error)
		}
		r.fence = slices.Contains(a.Can, "fence")
	}
	return nil
}

func (r *racer) close() {
	for _, h := range r.hs {
		h.Quit()
	}
	r.g.KillAll(5 * time.Second)
	if r.pool != nil {
		r.pool.Close()
	}
	if r.relay != nil {
		r.relay.Close()
	}
	if r.built != nil {
		r.built.Remove()
	}
}

// spend is one spend as the verdict reads it.
type spend struct {
	spender                int
	read, wrote            int64
	gotAt, readAt, wroteAt time.Duration // since the round's start: the lease's answer, the read's, the write's
	stopped                bool
}

// run runs one round: every spender acquires, reads, works and writes
// until the round ends; the first to read after the room's moment is
// stopped past its TTL.
func (r *racer) run(ctx context.Context, p Plan) Result {
	res := Result{Round: p.Round, Lock: r.lock, Fenced: p.Fence || !p.Plain && r.fence}
	start := time.Now().Add(time.Duration(p.StartIn * float64(time.Second)))
	end := start.Add(time.Duration(p.Seconds * float64(time.Second)))
	stopAt := start.Add(time.Duration(p.StopAt * float64(time.Second)))
	select {
	case <-time.After(time.Until(start)):
	case <-ctx.Done():
		return res
	}
	var (
		mu      sync.Mutex
		spends  []spend
		stopped atomic.Bool
		wg      sync.WaitGroup
	)
	note := func(err error) {
		if len(res.Errors) < 5 {
			res.Errors = append(res.Errors, harness.Printable(err.Error()))
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i, h := range r.hs {
		wg.Go(func() {
			for n := 0; time.Now().Before(end) && ctx.Err() == nil; n++ {
				lease := fmt.Sprintf("r%d-%d", p.Round, n)
				a, err := h.Call(holder.Request{Op: "acquire", Lease: lease, Key: p.Key, TTL: ms(leaseTTL), Wait: ms(acquireWait), Fenced: res.Fenced}, acquireWait+5*time.Second)
				if err != nil { // the holder is gone: this spender is done
					mu.Lock()
					note(fmt.Errorf("spender %d: %w", i+1, err))
					mu.Unlock()
					return
				}
				if !a.OK {
					mu.Lock()
					res.NoLease++
					if !strings.Contains(a.Error, "deadline") {
						note(fmt.Errorf("spender %d: Acquire: %s", i+1, a.Error))
					}
					mu.Unlock()
					continue
				}
				s := spend{spender: i + 1, gotAt: time.Since(start)}
				var err2 error
				if res.Fenced {
					s.read, err2 = r.store.Claim(ctx, p.Wallet, a.Fence)
				} else {
					s.read, err2 = r.store.Balance(ctx, p.Wallet)
				}
				s.readAt = time.Since(start)
				if err2 == nil && time.Now().After(stopAt) && stopped.CompareAndSwap(false, true) {
					h.Pause() // past its lease, as step 5's A
					time.Sleep(stopFor)
					h.Resume()
					s.stopped = true
					mu.Lock()
					res.StopAt = s.readAt.Seconds()
					res.Stopped = fmt.Sprintf("spender %d at %.1f s, for %v", i+1, s.readAt.Seconds(), stopFor)
					mu.Unlock()
				}
				ok := false
				if err2 == nil && s.read >= amount {
					if err2 = wallet.Work(ctx, work); err2 == nil {
						s.wrote = s.read - amount
						if res.Fenced {
							err2 = r.store.WriteFenced(ctx, p.Wallet, a.Fence, s.wrote)
						} else {
							err2 = r.store.Write(ctx, p.Wallet, s.wrote)
						}
						ok = err2 == nil
					}
				}
				s.wroteAt = time.Since(start)
				mu.Lock()
				switch {
				case ok:
					res.Accepted++
					spends = append(spends, s)
				case errors.Is(err2, postgres.ErrStale):
					res.Refused++
				case errors.Is(err2, wallet.ErrUnknownOutcome):
					res.Unknown++
				case err2 != nil && ctx.Err() == nil:
					note(fmt.Errorf("spender %d: %w", i+1, err2))
				}
				mu.Unlock()
				h.Call(holder.Request{Op: "release", Lease: lease, Wait: 2000}, 7*time.Second)
			}
		})
	}
	wg.Wait()
	if p.Round == 1 { // a wallet of its own: what this laptop saw is all that happened to it
		res.Verdict = lostSpend(spends)
	}
	return res
}

// lostSpend is the first spend that wrote over another's, in a sentence:
// two spends that both landed, computed from one balance they both read.
// "" when there is none.
func lostSpend(spends []spend) string {
	slices.SortFunc(spends, func(a, b spend) int { return cmp.Compare(a.wroteAt, b.wroteAt) })
	for i, w := range spends {
		for _, x := range spends[:i] {
			if x.read != w.read || x.spender == w.spender {
				continue
			}
			late := ""
			switch {
			case w.stopped:
				late = fmt.Sprintf(", was stopped for %v, past its lease of %v,", stopFor, leaseTTL)
			case w.readAt-w.gotAt > leaseTTL: // a pause of the laptop's own: a slow machine
				late = fmt.Sprintf(" (%.1f s after it got the lock, past its lease of %v)", (w.readAt - w.gotAt).Seconds(), leaseTTL)
			}
			return fmt.Sprintf("spender %d read %d at %.1f s%s and wrote %d at %.1f s; spender %d had taken the lock and written %d at %.1f s in between, so spender %d wrote over it: a spend lost",
				w.spender, w.read, w.readAt.Seconds(), late, w.wrote, w.wroteAt.Seconds(), x.spender, x.wrote, x.wroteAt.Seconds(), w.spender)
		}
	}
	return ""
}
