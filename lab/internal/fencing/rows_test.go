package fencing

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAgain_triesUntilItWorksOrTimeIsUp(t *testing.T) {
	calls := 0
	err := again(t.Context(), func(context.Context) error {
		if calls++; calls < 3 {
			return errors.New("connection refused")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("again = %v after %d calls, want nil after 3", err, calls)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 250*time.Millisecond)
	defer cancel()
	calls = 0
	if err := again(ctx, func(context.Context) error { calls++; return errors.New("down") }); err == nil || calls < 2 {
		t.Errorf("again = %v after %d calls, want the last error after a few", err, calls)
	}
}
