package loadtest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Waiting for a connection is not waiting for the lock. With more workers
// than pooled connections, every command of a spend first queues for a
// connection, the lock's SET NX included: timed from the outside, that
// queue looks like lock wait. Both drivers say how long each call waited
// for a connection, with the call's context, so each spend carries a
// poolClock in its contexts and the drivers' reports are added to it:
// go-redis through its metrics recorder (ConnectionWaitTime: the wait for
// a free turn in the pool), pgxpool through an AcquireTracer (the whole of
// Acquire). A spend's lock wait is then its time to get the lock less what
// its calls waited for a connection meanwhile (see call.lockWait).

// A lease's clock runs from the moment Redis grants it. A spend that then
// waits for a connection spends its lease in a client-side queue: at
// 10,000 workers on 256 connections a command waited 1.5 s at the median,
// and 42% of lock's spends failed (issue 39, item 15). A service would
// not start more critical sections than it can serve, and neither does
// the load test: a spend that takes a lease first waits for a turn (see
// turns), one per connection of the pool that serves its critical
// section, until it has released. The wait for a turn counts as a wait
// for the pool.

// turns admits as many critical sections at once as a pool has
// connections: a spend takes a turn before its lease and gives it back
// after its release.
type turns struct {
	free     chan struct{} // one slot per turn; a taken turn fills one
	postgres bool          // sized to the PostgreSQL pool: its waits are that pool's
}

// poolClock adds up what the calls of one spend waited for a
// connection, in nanoseconds, per service. A spend's watchdog refreshes
// on contexts derived from the spend's, so their waits count too.
type poolClock struct {
	redis, postgres atomic.Int64
}

func (c *poolClock) total() time.Duration {
	return time.Duration(c.redis.Load() + c.postgres.Load())
}

type poolClockKey struct{}

// withPoolClock returns ctx carrying c: the connection waits of every call
// made on it, or on a context derived from it, are added to c.
func withPoolClock(ctx context.Context, c *poolClock) context.Context {
	return context.WithValue(ctx, poolClockKey{}, c)
}

func poolClockOf(ctx context.Context) *poolClock {
	c, _ := ctx.Value(poolClockKey{}).(*poolClock)
	return c
}

// redisWaits is the go-redis metrics recorder of the process (it has one):
// it adds each call's wait for a connection to the poolClock of the call's
// context, and records nothing else.
type redisWaits struct{}

var watchRedisOnce sync.Once

// watchRedisPoolWaits installs redisWaits, once per process.
func watchRedisPoolWaits() {
	watchRedisOnce.Do(func() { redis.SetOTelRecorder(redisWaits{}) })
}

func (redisWaits) RecordConnectionWaitTime(ctx context.Context, d time.Duration, _ redis.ConnInfo) {
	if c := poolClockOf(ctx); c != nil {
		c.redis.Add(int64(d))
	}
}

func (redisWaits) RecordOperationDuration(context.Context, time.Duration, redis.Cmder, int, error, redis.ConnInfo, int) {
}
func (redisWaits) RecordPipelineOperationDuration(context.Context, time.Duration, string, int, int, error, redis.ConnInfo, int) {
}
func (redisWaits) RecordConnectionCreateTime(context.Context, time.Duration, redis.ConnInfo) {}
func (redisWaits) RecordConnectionRelaxedTimeout(context.Context, int, redis.ConnInfo, string, string) {
}
func (redisWaits) RecordConnectionHandoff(context.Context, redis.ConnInfo, string)           {}
func (redisWaits) RecordError(context.Context, string, redis.ConnInfo, string, bool, int)    {}
func (redisWaits) RecordMaintenanceNotification(context.Context, redis.ConnInfo, string)     {}
func (redisWaits) RecordConnectionClosed(context.Context, redis.ConnInfo, string, error)     {}
func (redisWaits) RecordPubSubMessage(context.Context, redis.ConnInfo, string, string, bool) {}
func (redisWaits) RecordStreamLag(context.Context, time.Duration, redis.ConnInfo, string, string, string) {
}

// postgresWaits times each pgxpool Acquire made on a context with a
// poolClock and adds it to the clock. As the pool's ConnConfig.Tracer, it
// is a silent pgx.QueryTracer too.
type postgresWaits struct{}

type acquireStartKey struct{}

func (postgresWaits) TraceAcquireStart(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireStartData) context.Context {
	if poolClockOf(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, acquireStartKey{}, time.Now())
}

func (postgresWaits) TraceAcquireEnd(ctx context.Context, _ *pgxpool.Pool, _ pgxpool.TraceAcquireEndData) {
	start, ok := ctx.Value(acquireStartKey{}).(time.Time)
	if c := poolClockOf(ctx); ok && c != nil {
		c.postgres.Add(int64(time.Since(start)))
	}
}

func (postgresWaits) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (postgresWaits) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
