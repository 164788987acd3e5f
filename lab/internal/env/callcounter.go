package env

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// CallCounter is a go-redis hook that counts the commands a client sends,
// each command of a pipeline included: add it with AddHook. A
// subscription's commands do not go through it. The zero value counts
// from 0; a nil *CallCounter counts nothing.
type CallCounter struct{ n atomic.Int64 }

// Sent returns how many commands went out so far, -1 for a nil counter.
func (c *CallCounter) Sent() int64 {
	if c == nil {
		return -1
	}
	return c.n.Load()
}

// Reset starts the count again from 0.
func (c *CallCounter) Reset() { c.n.Store(0) }

func (c *CallCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *CallCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *CallCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
