package labtest

import (
	"context"
	"testing"
	"time"
)

// Context returns a context that ends after d, or when the test ends,
// whichever comes first: a bound for a test's calls to Redis or
// PostgreSQL, so that a hung server fails the test instead of hanging it.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
