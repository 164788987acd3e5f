// The judge: it runs a lock through the article's properties, chapter by
// chapter, on a redis-server of its own and the real PostgreSQL, with real
// holder processes that it kills (SIGKILL) and pauses (SIGSTOP), and says
// in plain words what broke.
//
//	go run ./cmd/judge                       # the root's lock, the article's
//	go run ./cmd/judge -step 2 -seed 7       # step 2's properties, seed 7's schedule
//	go run ./cmd/judge -lock hardened        # a lock it knows: root, hardened, fair, redislock, redsync, ...
//	make judge LOCK=./mylock                 # a package with the root lock's API
//	make judge LOCK=mutant:del-no-token      # one of the mutants of the root's lock
//
// It exits 0 when no property failed, 1 when one did, 2 on bad flags and
// 130 after Ctrl-C, once every holder process and server it started is
// gone and its PostgreSQL rows are deleted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/judge"
	"example.com/walletlock/lab/judge/locks"
)

func main() {
	judge.Holder(locks.All()...)
	harness.Main(run)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := judge.ParseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
		}
		return 2
	}
	root := f.Root
	if root == "" {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "example.com/walletlock").Output()
		if err != nil {
			fmt.Fprintln(stderr, "judge: cannot find the repo's root module; pass -root")
			return 1
		}
		root = strings.TrimSpace(string(out))
	}
	if f.Exercise != "" {
		n, err := strconv.Atoi(f.Exercise)
		if err != nil {
			fmt.Fprintln(stderr, "judge: STEP= must be 2, 3 or 5 for an exercise, e.g. make exercise STEP=2")
			return 2
		}
		msg, err := judge.Exercise(ctx, root, n)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintln(stdout, msg)
		return 0
	}
	name, isMutant := strings.CutPrefix(f.Lock, "mutant:")
	isPath := strings.HasPrefix(f.Lock, ".") || strings.HasPrefix(f.Lock, "/")
	if !isMutant && !isPath {
		return judge.MainWith(ctx, args, stdout, stderr, locks.All())
	}
	var b *judge.Built
	if isMutant {
		m, ok := judge.MutantNamed(name)
		if !ok {
			fmt.Fprintf(stderr, "judge: no mutant %s; the mutants are %s\n", safe.Quote(name), judge.MutantNames())
			return 2
		}
		fmt.Fprintf(stdout, "judge: mutant %s, the root's lock with one mistake: %s\n", m.Name, m.Mistake)
		b, err = judge.BuildMutant(ctx, root, m)
	} else {
		path := f.Lock
		if !strings.HasPrefix(path, "/") {
			path = root + "/" + path
		}
		b, err = judge.BuildPackage(ctx, root, path, f.Lock)
		if err == nil {
			fmt.Fprintf(stdout, "judge: %s declares %s; what it lacks is \"not claimed\"\n", f.Lock, strings.Join(b.Claims, ", "))
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer b.Remove()
	cmd := exec.Command(b.Exe, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// The program shares this one's process group: a Ctrl-C reaches both,
	// and it cleans up its own before it exits.
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(stderr, "judge:", err)
		return 1
	}
	return 0
}
