package harness_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/testenv"
)

// An error that stops a run is one line and exit 1; after Ctrl-C it says
// the run was interrupted, and when, and the exit is 130.
func TestSession_Stopped(t *testing.T) {
	rdb := testenv.Redis(t)
	for _, tt := range []struct {
		name   string
		ctrlC  bool
		code   int
		stderr string
	}{
		{"without Ctrl-C", false, 1, "prog: boom\n"},
		{"after Ctrl-C", true, harness.ExitInterrupted, "prog: interrupted by Ctrl-C before the end (boom)\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, ctrlC := context.WithCancel(t.Context())
			defer ctrlC()
			s, err := harness.Start(ctx, rdb, "prog", testenv.Prefix(t, rdb))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(t.Output())
			if tt.ctrlC {
				ctrlC()
			}
			var stderr bytes.Buffer
			if code := s.Stopped(&stderr, "before the end", errors.New("boom")); code != tt.code || stderr.String() != tt.stderr {
				t.Errorf("Stopped = %d, %q; want %d, %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}
