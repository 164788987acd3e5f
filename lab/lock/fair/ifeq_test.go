package fair

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// recorded answers the commands of a fake server from replies recorded
// on a real one, and keeps what it was sent. This machine's Redis (7.0)
// has neither DELEX nor SET ... IFEQ; the replies are those of Redis 8.4
// (DELEX on a missing key: 0; SET ... IFEQ with a matching value: OK,
// with another: nil), or of Redis 7 (an unknown command).
type recorded struct {
	ifeq bool // the server is 8.4: it has DELEX and SET ... IFEQ
	held string
	sent []string
}

func (r *recorded) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *recorded) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (r *recorded) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		words := fmt.Sprint(cmd.Args())
		r.sent = append(r.sent, words)
		name := strings.ToLower(cmd.Name())
		switch {
		case !r.ifeq && name == "delex":
			cmd.SetErr(replyError("ERR unknown command 'DELEX', with args beginning with: "))
		case name == "delex":
			cmd.(*redis.IntCmd).SetVal(0)
		case name == "set" && len(cmd.Args()) > 4 && cmd.Args()[3] == "IFEQ" && cmd.Args()[4] == r.held:
			cmd.(interface{ SetVal(any) }).SetVal("OK")
		case name == "set":
			cmd.SetErr(redis.Nil)
		default:
			cmd.SetErr(fmt.Errorf("the fake has no reply for %s", words))
		}
		return cmd.Err()
	}
}

func TestRenewed_usesSetIfeqWhereTheServerHasIt(t *testing.T) {
	q := newFairKeys("lock:{wallet:1}")
	for _, c := range []struct {
		name       string
		ifeq       bool
		held, mine string
		want       bool
		wantSet    string // the SET sent, "" for none
	}{
		{"Redis 8.4, still held", true, "t1", "t1", true, "[set lock:{wallet:1} t1 IFEQ t1 PX 200]"},
		{"Redis 8.4, lease gone to another", true, "t2", "t1", false, "[set lock:{wallet:1} t1 IFEQ t1 PX 200]"},
		{"Redis 7: the try script renews instead", false, "t1", "t1", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
			t.Cleanup(func() { rdb.Close() })
			fake := &recorded{ifeq: c.ifeq, held: c.held}
			rdb.AddHook(fake)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if got := q.renewed(ctx, rdb, c.mine, 200*time.Millisecond); got != c.want {
				t.Errorf("renewed = %v, want %v", got, c.want)
			}
			var set string
			for _, s := range fake.sent {
				if strings.HasPrefix(s, "[set ") {
					set = s
				}
			}
			if set != c.wantSet {
				t.Errorf("sent %q, want the SET %q", fake.sent, c.wantSet)
			}
		})
	}
}

// replyError is an error reply from the server, as go-redis reads one.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}
