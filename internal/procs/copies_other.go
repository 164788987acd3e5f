//go:build !unix

package procs

import (
	"context"
	"errors"

	"example.com/walletlock/wallet"
)

// Without process groups Run could not interrupt its copies alone: Check
// refuses -procs above 1.
var errNoCopies = errors.New("-procs above 1 needs a Unix system (process groups); use -procs 1")

func (sp Spenders) runCopies(context.Context) wallet.Tally { return failed(sp.N, errNoCopies) }
