// The judge: it runs a lock through the article's properties, chapter by
// chapter, on a redis-server of its own behind a proxy of its own, and
// the real PostgreSQL, with real holder processes that it stops between
// any two commands, kills and pauses, and says in plain words what broke
// and the likely fix.
//
//	judge                              the root's lock, the article's
//	judge -chapter lease -seed 7       the lease chapter (step 2), seed 7's schedule
//	judge -lock hardened               a lock it knows: root, hardened, fair, redislock, ...
//	judge -lock ./mylock               a package with the root lock's API
//	judge -lock mutant:release-get-del one of the mutants of the root's lock
//	judge -exercise 2                  turn step 2's functions in lock/ into stubs
//	judge -matrix docs/judge.md        every lock and mutant, written into the page
//
// make judge, make exercise and make judge-matrix run it from the repo's
// folder. It exits 0 when no property failed, 1 when one did (or the
// judging could not run, or the package does not compile), 2 on what is
// wrong with its input (a flag, a LOCK= folder that does not exist, a
// function of the package's with another signature than the judge's, a
// STEP= with no exercise), refused in one line before any work, and 130
// after Ctrl-C, once every holder process and server it started is gone
// and its PostgreSQL rows are deleted.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lockbuild"
	"example.com/walletlock/lab/judge"
	"example.com/walletlock/lab/judge/locks"
)

// own are the flags this program reads before the judge's: the repo's
// folder, the exercise and the matrix; and -lock, when it names a folder
// or a mutant.
type own struct {
	root, exercise, matrix, lock string
	given                        map[string]bool // which of them the command line names, with a value or an empty one
	rest                         []string        // the judge's flags, -lock among them when it names a known lock
}

// split takes this program's own flags out of args (-name value or
// -name=value, one or two dashes).
func split(args []string) (o own, err error) {
	o.given = map[string]bool{}
	ours := map[string]*string{"root": &o.root, "exercise": &o.exercise, "matrix": &o.matrix, "lock": &o.lock}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			o.rest = append(o.rest, args[i:]...)
			return o, nil
		}
		into, ok := ours[name]
		if !ok {
			o.rest = append(o.rest, a)
			// The judge's flags with a value take the next argument with them.
			if slices.Contains([]string{"seed", "chapter", "step", "only", "html"}, name) && !hasValue && i+1 < len(args) {
				i++
				o.rest = append(o.rest, args[i])
			}
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return o, fmt.Errorf("judge: flag -%s needs a value", name)
			}
			i++
			value = args[i]
		}
		*into = value
		o.given[name] = true
	}
	return o, nil
}

func main() {
	env.Quiet() // the holders' too
	o, err := split(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	isMutant := strings.HasPrefix(o.lock, "mutant:")
	isPath := strings.ContainsRune(o.lock, '/') || strings.HasPrefix(o.lock, ".")
	if !o.given["exercise"] && !o.given["matrix"] && !isMutant && !isPath {
		if o.lock != "" {
			o.rest = append([]string{"-lock", o.lock}, o.rest...)
		}
		os.Args = append(os.Args[:1], o.rest...)
		judge.Main(locks.All()...) // the holder processes of the known locks, too
		return
	}
	harness.Main(func(ctx context.Context, _ []string, stdout, stderr io.Writer) int {
		return run(ctx, o, isMutant, stdout, stderr)
	})
}

// run is the exercise, the matrix, or the judging of a package or a
// mutant, built into a program of its own and run with the judge's flags.
func run(ctx context.Context, o own, isMutant bool, stdout, stderr io.Writer) int {
	root := o.root
	if root == "" {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "example.com/walletlock").Output()
		if err != nil {
			fmt.Fprintln(stderr, "judge: cannot find the repo's root module; pass -root")
			return 1
		}
		root = strings.TrimSpace(string(out))
	}
	switch {
	case o.given["exercise"]:
		msg, err := exercise(ctx, root, o.exercise)
		if err != nil {
			fmt.Fprintln(stderr, safe.Line(err.Error()))
			return exitCode(err)
		}
		fmt.Fprintln(stdout, msg)
		return 0
	case o.given["matrix"]:
		seed := int64(1)
		for i, a := range o.rest {
			if (a == "-seed" || a == "--seed") && i+1 < len(o.rest) {
				seed, _ = strconv.ParseInt(o.rest[i+1], 10, 64)
			}
		}
		return matrix(ctx, root, o.matrix, seed, stdout, stderr)
	}
	if err := checkFlags(ctx, o.rest); err != nil {
		fmt.Fprintln(stderr, err)
		return exitCode(err)
	}
	var b *lockbuild.Built
	var err error
	if isMutant {
		name := strings.TrimPrefix(o.lock, "mutant:")
		m, ok := lockbuild.MutantNamed(name)
		if !ok {
			fmt.Fprintf(stderr, "judge: no mutant %s; the mutants and variants are %s\n", safe.Quote(name), lockbuild.MutantNames())
			return 2
		}
		if m.Property != "" {
			fmt.Fprintf(stdout, "judge: mutant %s, the root's lock with one mistake: %s\n", m.Name, m.Mistake)
		} else {
			fmt.Fprintf(stdout, "judge: variant %s, the root's lock written correctly another way: %s\n", m.Name, m.Mistake)
		}
		b, err = lockbuild.BuildMutant(ctx, root, m)
	} else {
		path, _ := filepath.Abs(o.lock)
		b, err = lockbuild.Package(ctx, root, path, o.lock)
		if err == nil {
			fmt.Fprintf(stdout, "judge: %s declares %s; what it lacks is \"not claimed\"\n", safe.Line(o.lock), strings.Join(b.Claims, ", "))
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "judge: stopped by %s while building the judging program; nothing is left behind\n", harness.Why(ctx))
			return 130
		}
		fmt.Fprintln(stderr, safe.Line(err.Error()))
		return exitCode(err)
	}
	defer b.Remove()
	cmd := exec.Command(b.Exe, o.rest...)
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

// checkFlags has the judge's flags read by the kit (judge.Main) before a
// program is built for them: the build takes seconds, and the program
// would only refuse them then. This program is a judging program too, so
// it starts itself with -lock set to a name no lock has: the kit reads
// and checks every flag first (the -html page's folder among them), so it
// either refuses one in one line, or says that no lock has that name.
func checkFlags(ctx context.Context, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	const none = "(only-checking-flags)"
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, append([]string{"-lock", none}, args...)...)
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 && strings.Contains(stderr.String(), none) {
		return nil
	}
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		return lockbuild.Refuse(errors.New(msg))
	}
	return fmt.Errorf("judge: check the flags: %v", err)
}

// exitCode is 2 for a refusal, an error in what the user gave (a flag, a
// step, a path, a signature), as for a bad flag; and 1 for any other
// error, which says that the lock failed or the judging could not run.
func exitCode(err error) int {
	if errors.As(err, new(lockbuild.Refusal)) {
		return 2
	}
	return 1
}
