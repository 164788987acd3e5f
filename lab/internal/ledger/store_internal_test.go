package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestWithCause(t *testing.T) {
	lost := errors.New("lease lost")
	ctx, cancel := context.WithCancelCause(context.Background())
	if err := withCause(ctx, io.EOF); err != io.EOF {
		t.Errorf("with ctx live: %v, want the error as is", err)
	}
	cancel(lost)
	for _, err := range []error{
		io.EOF,           // an error that does not mention the ctx
		context.Canceled, // a bare ctx error
		fmt.Errorf("x: %w (%w)", context.Canceled, lost), // already complete
	} {
		got := withCause(ctx, err)
		if !errors.Is(got, err) || !errors.Is(got, context.Canceled) || !errors.Is(got, lost) {
			t.Errorf("withCause(%v) = %v, want it to match the error, context.Canceled and the cause", err, got)
		}
	}
	if got := withCause(ctx, nil); got != nil {
		t.Errorf("withCause(nil) = %v, want nil", got)
	}
}
