package harness

import (
	"strings"
	"sync"
)

// OneLine folds an error's message onto one line (pgx lists each address
// it tried on a line of its own): every report is one line.
func OneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// Errors collects errors from concurrent goroutines. The zero value is
// ready to use; a nil *Errors ignores what it is given.
type Errors struct {
	mu   sync.Mutex
	list []error
}

// Add records err.
func (e *Errors) Add(err error) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, err)
}

// List returns the errors recorded so far.
func (e *Errors) List() []error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.list...)
}
