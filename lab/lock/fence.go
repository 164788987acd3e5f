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
// l.Fence is greater than zero and greater than every fence handed out
// before from that counter. Hand the fence to the database with every write and let it
// refuse writes from an older fence (see postgres.Store.SpendFenced).
//
// The counter never expires. key and fenceKey must share a Redis Cluster
// hash slot, as "lock:{wallet:42}" and "fence:{wallet:42}" do; FenceKey
// gives a lock key a counter in its slot. It returns the same errors as
// Acquire, and one matching ErrInvalid for an empty fenceKey. The key is checked on every attempt, and so is
// the counter: an error matching ErrWrongType when the counter holds
// anything but a whole number of 0 or more, one matching ErrFenceOverflow
// when it has reached MaxFence, both at once and without taking the lock.
func AcquireFenced(ctx context.Context, rdb Client, key, fenceKey string, ttl time.Duration) (*Lock, error) {
	if err := validate(rdb, key, ttl); err != nil {
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
			return false, fenceRefusal(key, fenceKey, r)
		}
		return false, fmt.Errorf("unexpected reply %v from acquire_fenced.lua", reply)
	})
	if err != nil {
		return nil, err
	}
	l.Fence = fence
	return l, nil
}

// fenceRefusal turns a refusal of acquire_fenced.lua, {what, detail}, into
// an error.
func fenceRefusal(key, counter string, r []any) error {
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

// FenceKey returns the key of the fence counter for a lock key. It shares
// the lock key's Redis Cluster hash slot, so that one script can touch
// both: "app:lock:{wallet:42}" has the counter "app:lock:{wallet:42}:fence"
// (same hash tag), and a key without a hash tag, "lock:7", has the counter
// "{lock:7}:fence" (whose hash tag is the whole lock key). A key that no
// call here accepts (see slotPrefix) has no counter: FenceKey returns "".
func FenceKey(key string) string {
	prefix, err := slotPrefix(key)
	if err != nil {
		return ""
	}
	return prefix + ":fence"
}

// slotPrefix returns what the names the lock keeps next to key start with
// (its fence counter, a fair lock's queue, presence keys and channels), so
// that each lands in key's Redis Cluster slot (and on its Ring shard): key
// itself when it has a hash tag, and "{" + key + "}" otherwise. Redis
// Cluster hashes only a key's hash tag when it has one: the text between
// its first "{" and the first "}" after it, if that text is not empty.
//
// A key without a hash tag that holds a "}" ("lock}7", "a{}b", "}{") has
// no such prefix: Redis Cluster hashes it whole, and a name built from it
// either has a hash tag that stops at its "}" ("{lock}7}:fence" hashes
// "lock") or none, and then hashes differently. slotPrefix returns an
// error matching ErrInvalid for such a key, and for "".
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
// and returns its value afterwards. Use it when the database refuses a
// fence as stale while Redis handed it out as new: Redis lost the counter
// (a restart without persistence) and it restarted below what the database
// has accepted. Raising it to the database's highest fence lets the next
// acquisition be accepted again; it never lowers the counter. A counter
// that holds a string that is no number is overwritten with atLeast.
//
// It returns an error matching ErrInvalid for a nil rdb or an empty
// fenceKey, before talking to Redis, and an error matching
// ErrFenceOverflow, also before, for an atLeast above MaxFence (a script
// would store it rounded). When the counter already holds a number above
// MaxFence, or anything but a string, it changes nothing and returns an
// error matching ErrFenceOverflow or ErrWrongType.
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
