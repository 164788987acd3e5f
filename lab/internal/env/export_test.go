package env

import (
	"io"
	"sync"
	"testing"
)

// WarnTo sends Connect's warnings to w for the rest of the test, and lets
// the next Connect warn again.
func WarnTo(t *testing.T, w io.Writer) {
	saved := warnings
	warnings, warnedOnce = w, sync.Once{}
	t.Cleanup(func() { warnings, warnedOnce = saved, sync.Once{} })
}
