package labtest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"testing"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/harness"
)

// program behaves as every program here must: its name is this package's
// directory, as a program's is its cmd/ directory.
func program(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("labtest", flag.ContinueOnError)
	n := fs.Int("n", 1, "how many")
	service := fs.String("service", "redis", "redis or postgres")
	if code, stop := harness.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	if *n < 1 {
		fmt.Fprintln(stderr, "labtest: -n must be at least 1")
		return 2
	}
	var err error
	if *service == "postgres" {
		pool, perr := env.ConnectPostgres(ctx)
		if err = perr; err == nil {
			pool.Close()
		}
	} else {
		rdb, rerr := env.Connect(ctx)
		if err = rerr; err == nil {
			rdb.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "labtest:", err)
		return 1
	}
	fmt.Fprintln(stdout, "connected")
	return 0
}

func TestBadFlags_passesAProgramThatRefusesInOneLine(t *testing.T) {
	BadFlags(t, program, []BadFlag{
		{Name: "unknown flag", Args: []string{"-nope"}, Want: "-nope"},
		{Name: "not a number", Args: []string{"-n", "x"}, Want: "-n"},
		{Name: "its own check", Args: []string{"-n", "0"}, Want: "-n must be at least 1"},
		{Name: "stray argument", Args: []string{"extra"}, Want: `"extra"`},
	})
}

func TestHelp_passesAProgramThatListsItsFlags(t *testing.T) { Help(t, program) }

func TestRedisUnreachable_passesAProgramThatSaysSo(t *testing.T) {
	RedisUnreachable(t, program, "-service", "redis")
}

func TestPostgresUnreachable_passesAProgramThatSaysSo(t *testing.T) {
	PostgresUnreachable(t, program, "-service", "postgres")
}
