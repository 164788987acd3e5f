// Package once sends a command to Redis at most once, for package lock
// and package lock/fair, which both release and queue that way.
package once

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// A command that is not idempotent (a release, a queue push) must reach
// Redis at most once: sent twice after a lost reply, the second would
// find the key gone, or queue its waiter twice. go-redis resends a
// command whose reply was lost (up to the client's MaxRetries), unless
// the command says not to. These helpers send it that way.

// Processor is what sending once needs from a go-redis client or
// pipeline.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// onceCmd is a command that go-redis sends at most once: NoRetry tells its
// retry loop not to send it again after an error, because the command may
// have run (go-redis's own RawWriteTo uses the same flag). A redirect on
// Redis Cluster (MOVED, ASK) is still followed: the node that answered
// with one did not run the command.
type onceCmd struct{ *redis.Cmd }

func (onceCmd) NoRetry() bool { return true }

// Send sends the command args through c once (see onceCmd).
func Send(ctx context.Context, c Processor, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	c.Process(ctx, onceCmd{cmd}) // the error is cmd's
	return cmd
}

// EvalSha sends EVALSHA of s through c once, as s.EvalSha would send it
// with retries.
func EvalSha(ctx context.Context, c Processor, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	return Send(ctx, c, evalArgs("evalsha", s.Hash(), keys, args)...)
}

// Run is s.Run sent once: EVALSHA, and on NOSCRIPT (Redis ran nothing)
// EVAL of src, the script's source.
func Run(ctx context.Context, c Processor, s *redis.Script, src string, keys []string, args ...any) *redis.Cmd {
	cmd := EvalSha(ctx, c, s, keys, args...)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = Send(ctx, c, evalArgs("eval", src, keys, args)...)
	}
	return cmd
}

// evalArgs are the words of EVAL or EVALSHA: the script or its hash, the
// number of keys, the keys, the arguments.
func evalArgs(eval, script string, keys []string, args []any) []any {
	words := make([]any, 0, 3+len(keys)+len(args))
	words = append(words, eval, script, len(keys))
	for _, k := range keys {
		words = append(words, k)
	}
	return append(words, args...)
}

// Lost reports whether err says that no reply came (a broken connection,
// a timeout, ctx ended), as opposed to an error Redis replied with, a
// closed client or a connection that could not be made, which sent
// nothing: then the command may have run.
func Lost(err error) bool {
	var reply redis.Error
	var op *net.OpError
	return err != nil && !errors.As(err, &reply) && !errors.Is(err, redis.ErrClosed) &&
		!(errors.As(err, &op) && op.Op == "dial")
}
