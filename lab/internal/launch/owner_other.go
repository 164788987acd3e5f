//go:build !unix

package launch

import (
	"fmt"
	"os"
)

// Owner identifies a process that owns something on the machine; on this
// system no owner can be proven dead, so nothing is ever removed for it.
type Owner struct{ pid int }

// Self is this process as an owner.
func Self() Owner { return Owner{pid: os.Getpid()} }

func (o Owner) String() string { return fmt.Sprintf("%s pid=%d", ownerTag, o.pid) }

// Dead reports false: nothing here proves a process gone.
func (o Owner) Dead() bool { return false }

const ownerTag = "walletlock"

// OwnedTemp makes a temporary folder named prefix and random characters.
func OwnedTemp(prefix string) (string, error) { return os.MkdirTemp("", prefix+"*") }

// DeadTemps finds none: no owner can be proven dead here.
func DeadTemps(string) []string { return nil }
