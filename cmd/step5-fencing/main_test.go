package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lesson"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// jsonReport mirrors the -json output, with each phase's figures kept raw
// until the phase is known.
type jsonReport struct {
	Redis    string `json:"redis_version"`
	Postgres string `json:"postgres_version"`
	Phases   []struct {
		lesson.Result
		Figures json.RawMessage `json:"figures"`
	} `json:"phases"`
}

// runJSON runs the program with -json on a wallet and key prefix of its
// own, and checks that it cleaned up after itself.
// It may run in a goroutine of its own, so it reports instead of failing.
func runJSON(t *testing.T, rdb *redis.Client, pool *pgxpool.Pool, extra ...string) (jsonReport, error) {
	prefix, id := testenv.Prefix(t, rdb), testenv.WalletID(t)
	args := append([]string{"-json", "-prefix", prefix, "-wallet-id", fmt.Sprint(id)}, extra...)
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
		return jsonReport{}, fmt.Errorf("run(%q) = %d, want 0; stderr:\n%s", args, code, stderr.String())
	}
	if stderr.Len() > 0 {
		return jsonReport{}, fmt.Errorf("stderr is not empty:\n%s", stderr.String())
	}
	var r jsonReport
	dec := json.NewDecoder(&stdout)
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("stdout is not JSON: %v", err)
	}
	if dec.More() {
		return r, errors.New("stdout holds more than one JSON object")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key := wallet.LockKey(prefix, id)
	if n := rdb.Exists(ctx, key, lock.FenceKey(key)).Val(); n != 0 {
		return r, fmt.Errorf("%d Redis keys left behind", n)
	}
	var rows int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM walletlock_wallets WHERE id = $1", id).Scan(&rows); err != nil || rows != 0 {
		return r, fmt.Errorf("wallet row %d left behind (count %d, err %v)", id, rows, err)
	}
	return r, nil
}

// checkPhases holds one run's phases to the lesson and to the story each
// phase tells.
func checkPhases(r jsonReport, stalls int) error {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if r.Redis == "" || r.Postgres == "" {
		bad("versions: Redis %q, PostgreSQL %q", r.Redis, r.Postgres)
	}
	var names []string
	for _, p := range r.Phases {
		names = append(names, p.Phase)
		if p.Want != lesson.Want(step, p.Phase) || !p.Match() {
			bad("phase %s: verdict %s, want %s (%s)", p.Phase, p.Verdict, lesson.Want(step, p.Phase), p.Check)
		}
		var v wallet.Verdict
		var word string
		if _, err := fmt.Sscanf(p.Check, "accepted=%d balance=%d expected=%d %s", &v.Accepted, &v.Balance, &v.Expected, &word); err != nil || !strings.HasSuffix(p.Check, p.Verdict) {
			bad("phase %s: check %q does not end in its verdict %s", p.Phase, p.Check, p.Verdict)
		}
		switch p.Phase {
		case "1", "2":
			var t timeline
			if err := json.Unmarshal(p.Figures, &t); err != nil {
				bad("phase %s figures: %v", p.Phase, err)
				continue
			}
			if t.Stale != "A" || t.ReadA != initial || t.ReadB != initial {
				bad("phase %s: %+v, want A stale, both reading %d", p.Phase, t, initial)
			}
			if p.Phase == "1" && (!t.AAccepted || t.FenceA != 0 || p.Check != "accepted=2 balance=90 expected=80 BROKEN") {
				bad("phase 1: %+v, %q: want A's stale write accepted, no fences", t, p.Check)
			}
			if p.Phase == "2" && (t.AAccepted || t.FenceA != 1 || t.FenceB != 2 || t.Highest != 2 || p.Check != "accepted=1 balance=90 expected=90 OK") {
				bad("phase 2: %+v, %q: want A (fence 1) refused, B (fence 2) written", t, p.Check)
			}
		case "3":
			var c crowd
			if err := json.Unmarshal(p.Figures, &c); err != nil {
				bad("phase 3 figures: %v", err)
				continue
			}
			// Stalled spenders are refused unless nobody claimed the row
			// while they paused; on a busy machine, any spender can
			// outlive its lease and be refused too. Either way, the
			// verdict above holds.
			if c.Stalled != stalls || c.StalledStale > stalls || c.StalledStale > c.StaleRefused || len(c.RefusedFences) != c.StaleRefused {
				bad("phase 3: %+v, want %d stalled, one fence per refusal", c, stalls)
			}
			if v.Accepted+c.StaleRefused+c.ShortOfFunds != c.Spenders || c.ShortOfFunds != 0 {
				bad("phase 3: %+v, %q: every spender has funds, so each is accepted or refused as stale", c, p.Check)
			}
			if !slices.IsSorted(c.RefusedFences) || len(slices.Compact(slices.Clone(c.RefusedFences))) != len(c.RefusedFences) {
				bad("phase 3: refused fences %v are not distinct", c.RefusedFences)
			}
		case "4":
			var v4 versions
			if err := json.Unmarshal(p.Figures, &v4); err != nil || v4.Conflicts < 0 || p.Check != "accepted=10 balance=0 expected=0 OK" {
				bad("phase 4: %s, %q (%v)", p.Figures, p.Check, err)
			}
		}
	}
	if want := []string{"1", "2", "3", "4"}; !slices.Equal(names, want) {
		bad("phases %v, want %v", names, want)
	}
	return errors.Join(errorsOf(problems)...)
}

func errorsOf(msgs []string) []error {
	var errs []error
	for _, m := range msgs {
		errs = append(errs, errors.New(m))
	}
	return errs
}

// The verdicts are not a matter of luck: ten runs side by side, each on
// its own wallet and keys, all give the lesson's four verdicts. The runs
// keep the default timings but have 10 spenders and 2 stalls instead of
// 50 and 5, so that ten at once stay light on a 2-core machine.
func TestRun_verdictsHoldInTenRuns(t *testing.T) {
	t.Parallel()
	rdb, pool := testenv.Redis(t), testenv.Postgres(t)
	const runs, stalls = 10, 2
	var wg sync.WaitGroup
	errs := make([]error, runs)
	for i := range runs {
		wg.Go(func() {
			r, err := runJSON(t, rdb, pool, "-n", "10", "-stalls", fmt.Sprint(stalls))
			if err == nil {
				err = checkPhases(r, stalls)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d of %d: %v", i+1, runs, err)
		}
	}
}

// Each phase runs alone, and the text says who wrote stale and the fences.
func TestRun_onePhaseText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		phase string
		want  []string
	}{
		{"1", []string{"phase 1: ", "A: wakes, writes 90: accepted, and stale", "accepted=2 balance=90 expected=80 BROKEN"}},
		{"2", []string{"phase 2: ", "with fence 1", "with fence 2", "refused, the row carries fence 2 (B's): A's was the stale write", "accepted=1 balance=90 expected=90 OK"}},
		{"3", []string{"phase 3: ", "between read and write (TTL 200ms): 2\n", "stale writes refused: ", " OK\n"}},
		{"4", []string{"phase 4: ", "version conflicts: ", "accepted=10 balance=0 expected=0 OK"}},
	}
	for _, tt := range tests {
		t.Run("phase "+tt.phase, func(t *testing.T) {
			t.Parallel()
			rdb := testenv.Redis(t)
			testenv.Postgres(t)
			args := []string{"-phase", tt.phase, "-n", "20", "-stalls", "2", "-prefix", testenv.Prefix(t, rdb), "-wallet-id", fmt.Sprint(testenv.WalletID(t))}
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("run = %d, want 0; stderr:\n%s", code, stderr.String())
			}
			out := stdout.String()
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("output does not contain %q:\n%s", want, out)
				}
			}
			if n := strings.Count(out, "\nphase "); n != 1 {
				t.Errorf("output has %d phases, want 1:\n%s", n, out)
			}
		})
	}
}

func TestRun_badFlags(t *testing.T) {
	testenv.BadFlags(t, run, []testenv.BadFlag{
		{Name: "unknown flag", Args: []string{"-nope"}, Want: "-nope"},
		{Name: "not a duration", Args: []string{"-ttl", "soon"}, Want: "-ttl"},
		{Name: "TTL zero", Args: []string{"-ttl", "0"}, Want: "TTL must be at least 1ms"},
		{Name: "TTL under 1ms", Args: []string{"-ttl", "500us"}, Want: "TTL must be at least 1ms"},
		{Name: "pause within the TTL", Args: []string{"-ttl", "200ms", "-pause", "200ms"}, Want: "-pause"},
		{Name: "negative work", Args: []string{"-work", "-1ms"}, Want: "-work"},
		{Name: "no spenders", Args: []string{"-n", "0"}, Want: "-n"},
		{Name: "more stalls than spenders", Args: []string{"-n", "3", "-stalls", "4"}, Want: "-stalls"},
		{Name: "negative stalls", Args: []string{"-stalls", "-1"}, Want: "-stalls"},
		{Name: "no such phase", Args: []string{"-phase", "5"}, Want: "-phase"},
		{Name: "wallet zero", Args: []string{"-wallet-id", "0"}, Want: "-wallet-id"},
		{Name: "empty prefix", Args: []string{"-prefix", ""}, Want: "-prefix"},
		{Name: "stray argument", Args: []string{"now"}, Want: `"now"`},
	})
}

func TestRun_help(t *testing.T) { testenv.Help(t, run) }

// PostgreSQL is checked first, and its problems never show the password.
func TestRun_postgresUnreachable(t *testing.T) { testenv.PostgresUnreachable(t, run) }

func TestRun_postgresURLMalformed(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://walletlock:s3cret@localhost:notaport/walletlock")
	if msg := testenv.FailsInOneLine(t, run, nil, "DATABASE_URL"); strings.Contains(msg, "s3cret") {
		t.Errorf("stderr shows the password: %q", msg)
	}
}

func TestRun_redisUnreachable(t *testing.T) {
	testenv.Postgres(t)
	testenv.RedisUnreachable(t, run, "-wallet-id", fmt.Sprint(testenv.WalletID(t)))
}

// Phase 4 is the approach without Redis: run alone, it needs none.
func TestRun_phase4WithoutRedis(t *testing.T) {
	testenv.Postgres(t)
	t.Setenv("REDIS_URL", "")
	t.Setenv("REDIS_ADDR", "127.0.0.1:1")
	var stdout, stderr bytes.Buffer
	args := []string{"-phase", "4", "-wallet-id", fmt.Sprint(testenv.WalletID(t))}
	if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("run = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "no Redis") || !strings.Contains(out, "accepted=10 balance=0 expected=0 OK") {
		t.Errorf("output:\n%s", out)
	}
}
