# A holder of redis-py's Lock for the judge: JSON requests a line on stdin,
# one answer a line on stdout (docs/holder-protocol.md). One request at a
# time, so hello does not claim "concurrent"; no fence, no watchdog.
import json, os, sys

try:
    import redis
    from redis.exceptions import LockNotOwnedError
except ImportError as e:
    sys.exit(f"redis-py holder: {sys.executable} cannot import redis ({e}): "
             "install Debian's python3-redis (apt-get install python3-redis), or pip install redis")

host, _, port = os.environ["JUDGE_REDIS_ADDR"].rpartition(":")
# Each command is sent once; a reply that does not come within 2s is an
# error (the Go adapters' read timeout).
r = redis.Redis(host=host, port=int(port), socket_timeout=2, socket_connect_timeout=1)
leases = {}


def do(q):
    op, lease = q["op"], q.get("lease", "")
    if op in ("hello", "quit"):
        return {"can": ["refresh"]} if op == "hello" else {}
    if op == "acquire":
        if q.get("fenced"):
            return {"error": "redis-py's Lock has no fence", "not_claimed": True}
        # The TTL goes to redis-py as it is, in seconds: what it makes of
        # 0 or 0.0005 is the verdict. blocking_timeout bounds the wait.
        lock = r.lock(q["key"], timeout=q["ttl_ms"] / 1000, blocking_timeout=max(q.get("wait_ms", 0), 0) / 1000)
        if not lock.acquire():
            return {"error": f"not acquired within {q.get('wait_ms', 0)}ms"}
        leases[lease] = lock
        return {}
    if op in ("release", "refresh"):
        try:
            if op == "release":
                leases.pop(lease).release()
            else:  # replace the TTL, as Refresh does; reacquire() takes no TTL
                leases[lease].extend(q["ttl_ms"] / 1000, replace_ttl=True)
            return {}
        except LockNotOwnedError as e:  # the script answered: not our token
            return {"error": str(e), "not_held": True}
        except (redis.ConnectionError, redis.TimeoutError) as e:  # no answer: nobody knows
            return {"error": f"{type(e).__name__}: {e}", "unknown": True}
    if op in ("watch", "stop"):
        return {"error": "redis-py's Lock has no watchdog", "not_claimed": True}
    return {"error": f"no request {op!r}"}


for line in sys.stdin:
    q = json.loads(line)
    try:
        a = do(q)
    except Exception as e:  # the lock's own error: an answer, not a crash
        a = {"error": f"{type(e).__name__}: {e}"}
    a.update(id=q["id"], lease=q.get("lease", ""), ok="error" not in a)
    print(json.dumps(a), flush=True)
    if q["op"] == "quit":
        break
