package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/fencing"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/internal/testenv"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/postgres"
)

// defaultPrefix is the -prefix step 5 uses when not told one.
const defaultPrefix = wallet.DefaultPrefix + "step5:"

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
func runJSON(t *testing.T, rdb redis.UniversalClient, pool *pgxpool.Pool, extra ...string) (jsonReport, error) {
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

// checkPhases holds one run's phases to the lesson and to the fencing.Story each
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
		case "1", "1b", "2":
			var t fencing.Story
			if err := json.Unmarshal(p.Figures, &t); err != nil {
				bad("phase %s figures: %v", p.Phase, err)
				continue
			}
			if stale := map[bool]string{true: "B", false: "A"}[p.Phase == "1b"]; t.Stale != stale || t.ReadA != initial || t.ReadB != initial || !t.BAccepted {
				bad("phase %s: %+v, want %s stale, both reading %d, B's write accepted", p.Phase, t, stale, initial)
			}
			if p.Phase == "1" && (!t.AAccepted || t.FenceA != 0 || p.Check != "accepted=2 balance=90 expected=80 BROKEN") {
				bad("phase 1: %+v, %q: want A's stale write accepted, no fences", t, p.Check)
			}
			if p.Phase == "1b" && (!t.AAccepted || t.FenceA != 1 || t.FenceB != 2 || t.Highest != 2 || p.Check != "accepted=2 balance=90 expected=80 BROKEN") {
				bad("phase 1b: %+v, %q: want A (fence 1) and B (fence 2) both accepted, one spend lost", t, p.Check)
			}
			if p.Phase == "2" && (t.AAccepted || t.FenceA != 1 || t.FenceB != 2 || t.Highest != 2 || p.Check != "accepted=1 balance=90 expected=90 OK") {
				bad("phase 2: %+v, %q: want A (fence 1) refused, B (fence 2) written", t, p.Check)
			}
		case "3":
			var c fencing.Refusals
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
	if want := []string{"1", "1b", "2", "3", "4"}; !slices.Equal(names, want) {
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
// its own wallet and keys, all give the lesson's five verdicts. The runs
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
		{"1", []string{"phase 1: ", "A: wakes, writes 90: accepted, and stale", "accepted=2 balance=90 expected=80 BROKEN linearizable=no"}},
		{"1b", []string{"phase 1b: the fence checked on write only", "reads 100 without claiming the row", "A: wakes, writes 90 with fence 1: accepted", "B: writes 90 with fence 2: accepted, the row's fence was 1", "accepted=2 balance=90 expected=80 BROKEN linearizable=no"}},
		{"2", []string{"phase 2: ", "with fence 1", "with fence 2", "refused, the row carries fence 2 (B's): A's was the stale write", "accepted=1 balance=90 expected=90 OK linearizable=yes"}},
		{"3", []string{"phase 3: 20 fenced spenders, some stalling past the TTL\n", "between read and write (TTL 200ms): 2\n", "stale writes refused: ", " OK linearizable=yes\n"}},
		{"4", []string{"phase 4: ", "version conflicts: ", "accepted=10 balance=0 expected=0 OK linearizable=yes"}},
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
		{Name: "empty prefix, same words as every step", Args: []string{"-prefix", ""}, Want: "-prefix must not be empty: every key this program writes needs one"},
		{Name: "too many spenders", Args: []string{"-n", "1001", "-stalls", "0"}, Want: "-n must be at most 1000"},
		{Name: "spenders past int64 arithmetic", Args: []string{"-n", "9223372036854775807"}, Want: "-n must be at most 1000"},
		{Name: "TTL too long", Args: []string{"-ttl", "2h", "-pause", "3h"}, Want: "-ttl must be at most 1h"},
		{Name: "pause too long", Args: []string{"-pause", "1000000h"}, Want: "-pause must be at most 1h"},
		{Name: "work too long", Args: []string{"-work", "2h"}, Want: "-work must be at most 1h"},
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

// A DATABASE_URL whose password holds an unescaped @ never shows any part
// of it. The program adds nothing of its own about the URL: its one line
// is package wallet's description, which wallet keeps free of user-info.
func TestRun_databaseURLPasswordNeverShown(t *testing.T) {
	const password = "s3cr@tPzq9"
	t.Setenv("DATABASE_URL", "postgres://walletlock:"+password+"@127.0.0.1:1/walletlock?sslmode=disable")
	_, werr := postgres.Connect(t.Context())
	if werr == nil {
		t.Fatal("ConnectPostgres reached a server at 127.0.0.1:1")
	}
	msg := testenv.FailsInOneLine(t, run, nil)
	if want := step + ": " + harness.OneLine(werr) + "\n"; msg != want {
		t.Errorf("stderr = %q, want wallet's description alone: %q", msg, want)
	}
	testenv.NoSecretBeyond(t, msg, harness.OneLine(werr), password)
}

// The same for REDIS_URL, once PostgreSQL has answered.
func TestRun_redisURLPasswordNeverShown(t *testing.T) {
	testenv.Postgres(t)
	const password = "s3cr@tPzq9"
	t.Setenv("REDIS_URL", "redis://walletlock:"+password+"@127.0.0.1:1/0")
	_, werr := services.Connect(t.Context())
	if werr == nil {
		t.Fatal("Connect reached a server at 127.0.0.1:1")
	}
	msg := testenv.FailsInOneLine(t, run, []string{"-wallet-id", fmt.Sprint(testenv.WalletID(t))})
	if want := step + ": " + harness.OneLine(werr) + "\n"; msg != want {
		t.Errorf("stderr = %q, want wallet's description alone: %q", msg, want)
	}
	testenv.NoSecretBeyond(t, msg, harness.OneLine(werr), password)
}

// Two runs at once on different prefixes, both with the default wallet:
// each derives a wallet of its own from its prefix, and both hold.
func TestRun_defaultWalletsOfTwoPrefixesDoNotCollide(t *testing.T) {
	rdb, pool := testenv.Redis(t), testenv.Postgres(t)
	prefixes := []string{testenv.Prefix(t, rdb), testenv.Prefix(t, rdb)}
	var wg sync.WaitGroup
	ids := make([]int64, len(prefixes))
	for i, prefix := range prefixes {
		wg.Go(func() {
			args := []string{"-json", "-n", "10", "-stalls", "2", "-prefix", prefix}
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
				t.Errorf("run on %s: exit %d\nstderr:\n%s", prefix, code, stderr.String())
				return
			}
			var r struct {
				Config struct {
					WalletID int64 `json:"wallet_id"`
				} `json:"config"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Errorf("run on %s: %v", prefix, err)
			}
			ids[i] = r.Config.WalletID
		})
	}
	wg.Wait()
	walletFor := func(prefix string) int64 { return harness.DefaultWallet(prefix, defaultPrefix) }
	if ids[0] == ids[1] || ids[0] != walletFor(prefixes[0]) || ids[1] != walletFor(prefixes[1]) {
		t.Errorf("wallets %v, want %d and %d, apart", ids, walletFor(prefixes[0]), walletFor(prefixes[1]))
	}
	var rows int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM walletlock_wallets WHERE id = ANY($1)", ids).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("%d rows left (%v)", rows, err)
	}
	if walletFor(defaultPrefix) != wallet.DemoWallet {
		t.Errorf("the default prefix uses wallet %d, want the article's %d", walletFor(defaultPrefix), wallet.DemoWallet)
	}
}

// startSlow starts a run of phase 3 that lasts a second or so, and waits
// until its wallet row exists. It returns the prefix, the wallet and a
// channel that yields the run's exit code and output when it ends.
func startSlow(t *testing.T, ctx context.Context, rdb redis.UniversalClient, pool *pgxpool.Pool, extra ...string) (string, int64, <-chan string) {
	t.Helper()
	prefix, id := testenv.Prefix(t, rdb), testenv.WalletID(t)
	args := append([]string{"-phase", "3", "-n", "4", "-stalls", "2", "-ttl", "300ms", "-pause", "1s", "-prefix", prefix, "-wallet-id", fmt.Sprint(id)}, extra...)
	done := make(chan string, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := run(ctx, args, &stdout, &stderr)
		done <- fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM walletlock_wallets WHERE id = $1 AND fence > 0", id).Scan(&n); err == nil && n == 1 {
			return prefix, id, done
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run's wallet row %d was not claimed within a minute", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A run that asks for a wallet another run (on another prefix) is using
// is refused in one line, and the other run is unharmed.
func TestRun_explicitWalletOfAnotherRunIsRefused(t *testing.T) {
	rdb, pool := testenv.Redis(t), testenv.Postgres(t)
	first, id, done := startSlow(t, t.Context(), rdb, pool)

	var stdout, stderr bytes.Buffer
	args := []string{"-phase", "4", "-wallet-id", fmt.Sprint(id), "-prefix", testenv.Prefix(t, rdb)}
	if code := run(t.Context(), args, &stdout, &stderr); code != 1 {
		t.Errorf("second run: exit %d, want 1", code)
	}
	msg := stderr.String()
	want := fmt.Sprintf("%s: wallet: wallet %d in PostgreSQL belongs to the run with prefix %q", step, id, first)
	if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, want) {
		t.Errorf("second run: stderr %q, want one line starting %q", msg, want)
	}
	if out := <-done; !strings.HasPrefix(out, "exit 0\n") || !strings.Contains(out, " OK linearizable=yes\n") {
		t.Errorf("first run:\n%s", out)
	}
}

// A second run on a prefix in use is refused at once, in one line that
// names the prefix and -prefix; the first run is not disturbed.
func TestRun_secondRunOnThePrefixIsRefused(t *testing.T) {
	testenv.Postgres(t)
	testenv.SecondRunRefused(t, run, "-phase", "3", "-n", "4", "-stalls", "2", "-ttl", "300ms", "-pause", "1s", "-wallet-id", fmt.Sprint(testenv.WalletID(t)))
}

// Ctrl-C stops the phase, deletes the row and the keys and exits 130;
// with Redis frozen it still returns within the clean-up time, deletes
// the row, and names the keys it could not delete.
func TestRun_ctrlC(t *testing.T) {
	pool := testenv.Postgres(t)
	for _, frozen := range []bool{false, true} {
		name := map[bool]string{false: "mid-phase", true: "Redis frozen"}[frozen]
		t.Run(name, func(t *testing.T) {
			id := testenv.WalletID(t)
			key := wallet.LockKey("", id) + ":fence" // phase 3 has begun
			args := []string{"-phase", "3", "-n", "20", "-work", "20ms", "-wallet-id", fmt.Sprint(id)}
			_, stderr := testenv.Interrupt(t, run, testenv.CtrlC{Args: args, Key: key, After: 100 * time.Millisecond, Frozen: frozen})
			if !strings.Contains(stderr, "interrupted by Ctrl-C during phase 3, which is not judged") || strings.Contains(stderr, "psql") {
				t.Errorf("stderr:\n%s", stderr)
			}
			var rows int
			if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM walletlock_wallets WHERE id = $1", id).Scan(&rows); err != nil || rows != 0 {
				t.Errorf("the wallet row is left (%d, %v)", rows, err)
			}
		})
	}
}

// Ctrl-C with PostgreSQL frozen: the run returns within the clean-up time,
// deletes the keys, and names the row in one line whose psql command
// deletes it once PostgreSQL is back.
func TestRun_ctrlCWithPostgresFrozen(t *testing.T) {
	rdb := testenv.Redis(t)
	srv := testenv.StartPostgres(t)
	pool := srv.Use(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	prefix, id, done := startSlow(t, ctx, rdb, pool)
	srv.Freeze(t)
	cancel()
	start := time.Now()
	var out string
	select {
	case out = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return within 30s of Ctrl-C")
	}
	took := time.Since(start)
	srv.Thaw()
	t.Logf("returned %v after Ctrl-C", took)
	if limit := harness.CleanupTimeout + 2*time.Second; took > limit {
		t.Errorf("run took %v to return after Ctrl-C, want at most %v", took, limit)
	}
	if !strings.HasPrefix(out, "exit 130\n") || !strings.Contains(out, "interrupted by Ctrl-C during phase 3") {
		t.Errorf("want exit 130 and the phase interrupted:\n%s", out)
	}
	var named []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, "could not delete") {
			named = append(named, strings.TrimSuffix(line, "\n"))
		}
	}
	want := "; it may still be there, delete it with: " + harness.PostgresDelete(prefix, id)
	if len(named) != 1 || !strings.HasSuffix(named[0], want) || !strings.Contains(named[0], fmt.Sprintf("wallet %d in PostgreSQL", id)) {
		t.Fatalf("want one line naming the row and ending %q:\n%s", want, out)
	}
	if key := wallet.LockKey(prefix, id); rdb.Exists(t.Context(), key, lock.FenceKey(key)).Val() != 0 {
		t.Errorf("the keys are left: a frozen PostgreSQL must not keep them")
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("no psql to run the command with")
	}
	command := strings.TrimPrefix(want, "; it may still be there, delete it with: ")
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+srv.URL)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	var rows int
	if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM walletlock_wallets WHERE id = $1", id).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("the row is still there after the command (%d, %v)", rows, err)
	}
}

// PostgreSQL goes down in the middle of a run and comes back while the run
// cleans up: the run fails, and its row is deleted once PostgreSQL is
// back, or named if it did not come back in time. Never left without a
// word.
func TestRun_postgresDownLeavesNoRowUnnamed(t *testing.T) {
	rdb := testenv.Redis(t)
	srv := testenv.StartPostgres(t)
	pool := srv.Use(t)
	_, id, done := startSlow(t, t.Context(), rdb, pool)
	srv.Stop()
	time.Sleep(200 * time.Millisecond)
	srv.Start()
	out := <-done
	if !strings.HasPrefix(out, "exit 1\n") {
		t.Errorf("want exit 1:\n%s", out)
	}
	conn, err := pgx.Connect(t.Context(), srv.URL) // the pool's connections died with the server
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM walletlock_wallets WHERE id = $1", id).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	named := strings.Contains(out, "could not delete wallet")
	t.Logf("row left: %v, named: %v", rows == 1, named)
	if rows == 1 && !named || rows == 0 && named {
		t.Errorf("%d rows left, named: %v:\n%s", rows, named, out)
	}
}

// Redis loses the fence counter mid-phase (a restart without persistence,
// played here by deleting it): fences are handed out again, PostgreSQL
// refuses them, fencing.Fenced heals the counter, and phase 3 says so instead
// of blaming a busy machine. The verdict holds.
func TestRun_phase3SaysWhenTheCounterWentBackwards(t *testing.T) {
	rdb, pool := testenv.Redis(t), testenv.Postgres(t)
	prefix, id := testenv.Prefix(t, rdb), testenv.WalletID(t)
	args := []string{"-phase", "3", "-n", "40", "-stalls", "0", "-work", "20ms", "-prefix", prefix, "-wallet-id", fmt.Sprint(id)}
	done := make(chan string, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), args, &stdout, &stderr)
		done <- fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		var fence int64
		if err := pool.QueryRow(t.Context(), "SELECT fence FROM walletlock_wallets WHERE id = $1", id).Scan(&fence); err == nil && fence >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("phase 3 did not reach fence 3 within a minute")
		}
		time.Sleep(2 * time.Millisecond)
	}
	key := wallet.LockKey(prefix, id)
	if err := rdb.Del(t.Context(), key, lock.FenceKey(key)).Err(); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if !strings.HasPrefix(out, "exit 0\n") || !strings.Contains(out, "spenders refused because the fence counter went backwards") || !strings.Contains(out, " OK linearizable=yes\n") {
		t.Errorf("want exit 0, OK and the counter going backwards named:\n%s", out)
	}
	if strings.Contains(out, "\n  spenders refused without a stall (a busy machine") {
		t.Errorf("refusals after Redis lost its data are blamed on a busy machine alone:\n%s", out)
	}
}

// -json keeps every key a run printed before the shared report
// (internal/harness): testdata/json-contract.json.
func TestRun_jsonKeepsEveryKey(t *testing.T) {
	testenv.Postgres(t)
	testenv.JSONKeepsKeys(t, run, "-n", "10", "-stalls", "2", "-wallet-id", fmt.Sprint(testenv.WalletID(t)))
}
