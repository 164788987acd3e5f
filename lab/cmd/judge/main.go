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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/judge"
	"example.com/walletlock/lab/judge/locks"
	"example.com/walletlock/wallet/postgres"
)

func main() {
	env.Quiet() // the holders' too
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
	if f.Matrix != "" {
		return matrix(ctx, f, root, stdout, stderr)
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

// matrix judges every lock and mutant, every chapter and fault, and
// writes the table to f.Matrix.
func matrix(ctx context.Context, f judge.Flags, root string, stdout, stderr io.Writer) int {
	start := time.Now()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "judge:", err)
		return 1
	}
	var rows []judge.MatrixRow
	for _, a := range locks.All() {
		t := time.Now()
		fmt.Fprintf(stdout, "judge: %s...\n", a.Name)
		rep, err := judge.Run(ctx, judge.Config{Adapter: a, Steps: judge.AllSteps, Seed: f.Seed, Exe: exe})
		rows = append(rows, judge.MatrixRow{Lock: a.Name, Report: rep, Err: err, Elapsed: time.Since(t)})
		fmt.Fprintf(stdout, "judge: %s: %s (%v)\n", a.Name, rep.Count(), time.Since(t).Round(time.Second))
		if ctx.Err() != nil {
			return 130
		}
	}
	for i := range judge.Mutants {
		m := judge.Mutants[i]
		t := time.Now()
		row := judge.MatrixRow{Lock: "mutant:" + m.Name, Mutant: &m}
		fmt.Fprintf(stdout, "judge: mutant:%s...\n", m.Name)
		b, err := judge.BuildMutant(ctx, root, m)
		if err == nil {
			var out []byte
			cmd := exec.CommandContext(ctx, b.Exe, "-json", "-seed", strconv.FormatInt(f.Seed, 10), "-step", "2,3,5,faults,guards")
			cmd.Stderr = stderr
			out, err = cmd.Output()
			if _, exit := err.(*exec.ExitError); exit {
				err = nil // a mutant fails: that is the point
			}
			if err == nil {
				err = json.Unmarshal(out, &row.Report)
			}
			b.Remove()
		}
		row.Err, row.Elapsed = err, time.Since(t)
		rows = append(rows, row)
		fmt.Fprintf(stdout, "judge: mutant:%s: %s (%v)\n", m.Name, row.Report.Count(), time.Since(t).Round(time.Second))
		if ctx.Err() != nil {
			return 130
		}
	}
	file, err := os.Create(f.Matrix)
	if err != nil {
		fmt.Fprintln(stderr, "judge:", err)
		return 1
	}
	defer file.Close()
	versions := "redis-server " + launch.RedisVersion() + " and PostgreSQL " + pgVersion(ctx)
	if err := judge.WriteMatrix(file, rows, f.Seed, versions, time.Since(start)); err != nil {
		fmt.Fprintln(stderr, "judge:", err)
		return 1
	}
	fmt.Fprintf(stdout, "judge: wrote %s (%v)\n", f.Matrix, time.Since(start).Round(time.Second))
	return 0
}

// pgVersion is the PostgreSQL server's version, as SHOW server_version
// says it.
func pgVersion(ctx context.Context) string {
	pool, err := postgres.Connect(ctx)
	if err != nil {
		return "?"
	}
	defer pool.Close()
	var v string
	if pool.QueryRow(ctx, "SHOW server_version").Scan(&v) != nil {
		return "?"
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}
