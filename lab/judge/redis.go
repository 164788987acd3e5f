package judge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is where the lock under judgement keeps its keys: a redis-server
// of the judge's own. Client gives a go-redis client for it, which the
// judge watches: it counts the commands sent, and on the judge's order
// loses the reply of a command that ran, or kills the holder process
// right after one, as a crash would.
type Redis struct {
	Addr   string
	h      *hooks
	client *redis.Client // the drill's, in a spender process (see drillHolder)
}

// Client returns a new client of the judge's Redis, with no retries (a
// command whose reply was lost is not sent again blind) and a context's
// deadline honoured. Close it when the lock closes; the holder process's
// end closes it otherwise.
func (r Redis) Client() *redis.Client {
	if r.client != nil {
		return r.client
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1, ContextTimeoutEnabled: true,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	if r.h != nil {
		c.AddHook(r.h)
	}
	return c
}

// crashLine starts the line a holder writes on stderr when the judge's
// hook kills it, followed by the commands it had sent.
const crashLine = "judge: killed after "

// hooks is the judge's hand on every client of a holder process.
type hooks struct {
	sent     atomic.Int64 // commands sent, answered or not
	mu       sync.Mutex
	ran      int64 // commands answered without an error since arm
	crashAt  int64 // kill this process right after the crashAt-th of them; 0: never
	loseNext bool  // lose the reply of the next command that runs
	lost     bool  // a reply was lost since arm
	log      []string
}

var errLostReply = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by the judge: the reply was lost")}

func (h *hooks) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *hooks) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.sent.Add(1)
		err := next(ctx, cmd)
		h.after([]redis.Cmder{cmd}, err)
		if n := cmd.Name(); err == nil && n != "hello" && n != "client" && h.takeLose() {
			cmd.SetErr(errLostReply)
			return errLostReply
		}
		return err
	}
}

func (h *hooks) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.sent.Add(int64(len(cmds)))
		err := next(ctx, cmds)
		h.after(cmds, err)
		return err
	}
}

// after notes what ran and kills the process when told to.
func (h *hooks) after(cmds []redis.Cmder, err error) {
	h.mu.Lock()
	counted := false
	for _, c := range cmds {
		// A new connection says HELLO and CLIENT SETINFO through the
		// same hooks: they are go-redis's, not the lock's.
		if name := c.Name(); name == "hello" || name == "client" {
			continue
		}
		counted = true
		h.log = append(h.log, describe(c))
	}
	if err == nil && counted {
		h.ran++
	}
	crash := h.crashAt > 0 && h.ran >= h.crashAt
	sent := strings.Join(h.log, ", ")
	h.mu.Unlock()
	if crash {
		// The judge reads this line to say what the dead holder had sent.
		fmt.Fprintf(os.Stderr, "%s%s\n", crashLine, sent)
		syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour) // SIGKILL is not deferred
	}
}

func (h *hooks) takeLose() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	lose := h.loseNext
	h.loseNext = false
	h.lost = h.lost || lose
	return lose
}

// arm sets what happens to the next commands, and starts a new log.
func (h *hooks) arm(crashAt int64, lose bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.crashAt, h.loseNext, h.ran, h.log, h.lost = crashAt, lose, 0, nil, false
}

// lostOne reports whether a reply was lost since the last arm.
func (h *hooks) lostOne() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

// commands returns what ran since the last arm.
func (h *hooks) commands() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.log...)
}

// describe is a command as the judge's sentences show it: "SET lock:1
// … PX 500 NX", "EVALSHA on lock:1": its name, its key, and its short
// arguments; a token or a script's body is left out.
func describe(c redis.Cmder) string {
	args := c.Args()
	if len(args) == 0 {
		return "?"
	}
	name := strings.ToUpper(fmt.Sprint(args[0]))
	if (name == "EVALSHA" || name == "EVAL") && len(args) > 3 {
		return fmt.Sprintf("%s on %v", name, args[3])
	}
	parts := []string{name}
	for i, a := range args[1:] {
		s := fmt.Sprint(a)
		switch {
		case i > 0 && len(s) > 5:
			s = "…"
		case i > 0:
			s = strings.ToUpper(s)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}
