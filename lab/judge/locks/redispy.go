package locks

import (
	_ "embed"
	"os"
	"os/exec"

	"example.com/walletlock/lab/judge"
)

// redisPyHolder is the holder of redis-py's Lock, in Python. It is run as
// `python3 -c` with its text, so that the judge finds it wherever it runs
// from, a test's folder or an installed program.
//
//go:embed redis_py_holder.py
var redisPyHolder string

// RedisPy is redis-py's Lock (Debian's python3-redis, 4.3.4): acquire with
// a blocking timeout, release, and extend with replace_ttl for Refresh. It
// has no fence and no watchdog, and answers one request at a time. The
// holder says what is missing when its Python cannot import redis.
var RedisPy = judge.Adapter{Name: "redis-py", Command: []string{Python(), "-c", redisPyHolder}}

// debianPython is where Debian's python3-redis installs for.
const debianPython = "/usr/bin/python3"

// Python is the interpreter the redis-py holder runs on: Debian's, where
// python3-redis puts redis, when it is there; else python3 on PATH. It
// does not run it: every holder process of every lock reads locks.All.
func Python() string {
	if _, err := os.Stat(debianPython); err == nil {
		return debianPython
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p
	}
	return "python3"
}
