package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire_fenced.lua
	acquireFencedLua    string
	acquireFencedScript = redis.NewScript(acquireFencedLua)

	//go:embed raise_fence.lua
	raiseFenceLua    string
	raiseFenceScript = redis.NewScript(raiseFenceLua)
)

// MaxFence is the largest fence AcquireFenced hands out and RaiseFence
// accepts: 2^53. The scripts run in Lua, whose numbers are doubles, and a
// double holds every whole number up to 2^53 exactly but not all of those
// above (2^53+1 would come back as 2^53).
const MaxFence int64 = 1 << 53

// ErrFenceOverflow is matched by the error of AcquireFenced when the fence
// counter has reached MaxFence, and of RaiseFence when asked to go above
// it. Nothing is written then.
var ErrFenceOverflow = errors.New("lock: fence above 2^53, the largest a Redis script holds exactly")

// AcquireFenced is Acquire plus a fencing token: taking the lock and
// incrementing the fence counter at fenceKey happen in one script, so
// l.Fence is greater than every fence handed out before from that
// counter. Hand it to the database with every write and let it refuse
// writes from an older fence (see postgres.Store.SpendFenced).
//
// The counter never expires. key and fenceKey must share a Redis Cluster
// hash slot, as "lock:{wallet:42}" and "fence:{wallet:42}" do (FenceKey
// names one). It returns Acquire's errors, one matching ErrInvalid for an
// empty fenceKey, and, at once and without taking the lock, one matching
// ErrWrongType when the counter holds anything but a whole number of 0 or
// more, or ErrFenceOverflow when it has reached MaxFence.
func AcquireFenced(ctx context.Context, rdb Client, key, fenceKey string, ttl time.Duration) (*Lock, error) {
	if _, err := CheckArgs(rdb, key, ttl); err != nil {
		return nil, err
	}
	if fenceKey == "" {
		return nil, errEmptyFenceKey
	}
	var fence int64
	l, err := acquire(ctx, rdb, key, ttl, func(token string, ttl time.Duration) (bool, error) {
		reply, err := acquireFencedScript.Run(ctx, rdb, []string{key, fenceKey}, token, ttl.Milliseconds()).Result()
		if err != nil {
			return false, err
		}
		switch r := reply.(type) {
		case int64:
			fence = r
			return fence > 0, nil
		case []any:
			return false, FenceRefusal(key, fenceKey, r)
		}
		return false, fmt.Errorf("unexpected reply %v from acquire_fenced.lua", reply)
	})
	if err != nil {
		return nil, err
	}
	l.Fence = fence
	return l, nil
}

// FenceRefusal turns what a script answers when it refuses to take a
// fenced lock on key, {what, detail} (see acquire_fenced.lua), into the
// error AcquireFenced returns for it; counter is the fence counter's key.
// lock/fair's scripts refuse the same way.
func FenceRefusal(key, counter string, r []any) error {
	if len(r) != 2 {
		return fmt.Errorf("unexpected reply %v from acquire_fenced.lua", r)
	}
	what, _ := r[0].(string)
	detail, _ := r[1].(string)
	switch what {
	case "lock type":
		return wrongType(key, detail)
	case "counter type":
		return errorIs{fmt.Sprintf("lock: acquire %s: fence counter %s holds a %s, not a number: delete it, then RaiseFence to the highest fence your database accepted", key, counter, detail), ErrWrongType}
	case "counter value":
		return errorIs{fmt.Sprintf("lock: acquire %s: fence counter %s holds %.30q, not a whole number of 0 or more: delete it, then RaiseFence to the highest fence your database accepted", key, counter, detail), ErrWrongType}
	case "counter limit":
		return errorIs{fmt.Sprintf("lock: acquire %s: fence counter %s is at %s, and no fence above 2^53 (%d) is handed out: a Redis script cannot hold it exactly", key, counter, detail, MaxFence), ErrFenceOverflow}
	}
	return fmt.Errorf("unexpected reply %v from acquire_fenced.lua", r)
}

// FenceKey returns the key of the fence counter for a lock key, in the
// lock key's Redis Cluster hash slot so that one script can touch both:
// "lock:{wallet:42}" has "lock:{wallet:42}:fence", and "lock:7", without a
// hash tag, has "{lock:7}:fence". A key that no call here accepts (see
// slotPrefix) has no counter: "".
func FenceKey(key string) string {
	prefix, err := slotPrefix(key)
	if err != nil {
		return ""
	}
	return prefix + ":fence"
}

// slotPrefix returns what the names the lock keeps beside key start with
// (its fence counter, a fair lock's queue...), so that each lands in key's
// Redis Cluster slot: key itself when it has a hash tag (the text between
// its first "{" and the first "}" after it, if not empty), and
// "{" + key + "}" otherwise. A key without a hash tag that holds a "}"
// ("lock}7", "a{}b") has none: "{lock}7}:fence" would hash "lock". For it,
// and for "", slotPrefix returns an error matching ErrInvalid.
func slotPrefix(key string) (string, error) {
	open := strings.IndexByte(key, '{')
	if open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key, nil // a hash tag: every name starting with key shares it
		}
	}
	switch {
	case key == "":
		return "", errEmptyKey
	case strings.Contains(key, "}"):
		return "", errorIs{fmt.Sprintf("lock: key has a \"}\" but no hash tag: %q: Redis Cluster hashes it whole, and the fence counter and a fair lock's queue cannot share its slot; put the part that names what is locked in braces, as in \"lock:{wallet:42}\"", key), ErrInvalid}
	}
	return "{" + key + "}", nil
}

// RaiseFence makes sure the fence counter at fenceKey is at least atLeast
// and returns its value afterwards; it never lowers it, and overwrites a
// string that is no number. Use it when the database refuses a fence as
// stale that Redis handed out as new: Redis lost the counter (a restart
// without persistence), and raised to the database's highest fence it
// hands out fences the database accepts again.
//
// Before talking to Redis it refuses a nil rdb or an empty fenceKey
// (ErrInvalid) and an atLeast above MaxFence (ErrFenceOverflow: a script
// would store it rounded). A counter above MaxFence, or of another type,
// is left as it is, with an error matching ErrFenceOverflow or
// ErrWrongType.
func RaiseFence(ctx context.Context, rdb Client, fenceKey string, atLeast int64) (int64, error) {
	switch {
	case isNil(rdb):
		return 0, errNilClient
	case fenceKey == "":
		return 0, errEmptyFenceKey
	case atLeast > MaxFence:
		return 0, errorIs{fmt.Sprintf("lock: raise fence counter %s to %d: above 2^53 (%d), which a Redis script cannot hold exactly", fenceKey, atLeast, MaxFence), ErrFenceOverflow}
	}
	reply, err := raiseFenceScript.Run(ctx, rdb, []string{fenceKey}, atLeast).Result()
	if err != nil {
		return 0, fmt.Errorf("lock: raise fence counter %s: %w", fenceKey, err)
	}
	switch r := reply.(type) {
	case string:
		n, err := strconv.ParseInt(r, 10, 64)
		switch {
		case err == nil && n <= MaxFence:
			return n, nil
		case err == nil || errors.Is(err, strconv.ErrRange):
			return 0, errorIs{fmt.Sprintf("lock: raise fence counter %s: it is at %s, above 2^53 (%d): AcquireFenced cannot go on from there", fenceKey, r, MaxFence), ErrFenceOverflow}
		}
		return 0, errorIs{fmt.Sprintf("lock: raise fence counter %s: it holds %.30q, not a whole number: delete it, then raise it again", fenceKey, r), ErrWrongType}
	case []any:
		if len(r) != 2 {
			break
		}
		t, _ := r[1].(string)
		return 0, errorIs{fmt.Sprintf("lock: raise fence counter %s: it holds a %s, not a number: delete it, then raise it again", fenceKey, t), ErrWrongType}
	}
	return 0, fmt.Errorf("lock: raise fence counter %s: unexpected reply %v", fenceKey, reply)
}
