package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
)

// beforeSend stands for pgx's errors that it marks as raised before
// anything was sent (a context that had already ended, a busy
// connection); their types are not exported.
type beforeSend struct{}

func (beforeSend) Error() string     { return "conn busy" }
func (beforeSend) SafeToRetry() bool { return true }

func TestWriteError(t *testing.T) {
	pgErr := func(severity, code string) error {
		return &pgconn.PgError{Severity: severity, SeverityUnlocalized: severity, Code: code, Message: "m"}
	}
	tests := []struct {
		name    string
		err     error
		unknown bool
	}{
		{"an ERROR reply: a check violation", pgErr("ERROR", "23514"), false},
		{"an ERROR reply: the statement was cancelled", pgErr("ERROR", "57014"), false},
		{"an ERROR reply, wrapped", fmt.Errorf("x: %w", pgErr("ERROR", "40001")), false},
		{"an ERROR reply from a server before 9.6", &pgconn.PgError{Severity: "ERROR", Code: "23514"}, false},
		{"COMMIT answered ROLLBACK", pgx.ErrTxCommitRollback, false},
		{"a failure before sending", fmt.Errorf("x: %w", beforeSend{}), false},
		{"a FATAL reply: the backend was terminated", pgErr("FATAL", "57P01"), true},
		{"a PANIC reply", pgErr("PANIC", "XX000"), true},
		{"the deadline passed in flight", context.DeadlineExceeded, true},
		{"ctx was cancelled in flight", context.Canceled, true},
		{"the connection closed", io.EOF, true},
		{"the connection closed mid-reply", io.ErrUnexpectedEOF, true},
		{"the connection was reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"a read timed out", &net.OpError{Op: "read", Net: "tcp", Err: errTimeout{}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := postgres.WriteError(tt.err)
			if !errors.Is(err, tt.err) {
				t.Errorf("WriteError(%v) = %v, which no longer matches the error", tt.err, err)
			}
			if got := errors.Is(err, wallet.ErrUnknownOutcome); got != tt.unknown {
				t.Errorf("WriteError(%v) = %v: matches wallet.ErrUnknownOutcome = %v, want %v", tt.err, err, got, tt.unknown)
			}
		})
	}
}

type errTimeout struct{}

func (errTimeout) Error() string   { return "i/o timeout" }
func (errTimeout) Timeout() bool   { return true }
func (errTimeout) Temporary() bool { return true }
