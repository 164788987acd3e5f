//go:build !unix

package harness

import (
	"context"
	"errors"

	"example.com/walletlock/lab/wallet"
)

// Without process groups run could not interrupt its copies alone: CheckProcs
// refuses -procs above 1.
var errNoCopies = errors.New("-procs above 1 needs a Unix system (process groups); use -procs 1")

func (sp spenders) runCopies(context.Context) wallet.Tally { return failed(sp.N, errNoCopies) }
