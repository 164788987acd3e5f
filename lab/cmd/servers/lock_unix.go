//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lock makes this command the only one in this checkout that starts or
// stops servers until unlock: two `make up` at once would both start
// PostgreSQL in one folder. The other waits, saying so once, until the
// first is done or ctx ends. The lock is the kernel's (flock on the
// .services folder itself), so it ends with the process that held it.
func (m *machine) lock(ctx context.Context) (unlock func(), err error) {
	f, err := os.Open(m.state())
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w", m.state(), err)
	}
	for said := false; ; said = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("cannot lock %s: %w", m.state(), err)
		}
		if !said {
			m.say("waiting for another `services` command in this checkout to finish")
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
