package harness

import "strings"

// OneLine folds an error's message onto one line (pgx lists each address
// it tried on a line of its own): every report is one line.
func OneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
