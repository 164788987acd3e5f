//go:build !unix

package netns

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"time"

	"example.com/walletlock/lab/internal/launch"
)

// Hosts is the number of hosts of a partition.
const Hosts = 3

// ErrNoNetns is returned by CanPartition where this process cannot make
// network namespaces.
var ErrNoNetns = errors.New("netns: a partition needs root and iproute2's ip")

// CanPartition reports that this system has no network namespaces.
func CanPartition() error {
	return fmt.Errorf("%w: network namespaces are Linux's, and this is %s (run it on Linux as root)", ErrNoNetns, runtime.GOOS)
}

// Net is the network of one run; there is none here.
type Net struct{}

// MakeNet makes no network here.
func MakeNet(string, string) (*Net, string, error) { return nil, "", CanPartition() }

// RemoveDead has nothing to remove here.
func RemoveDead() ([]string, error) { return nil, nil }

func (n *Net) LAN(int) string                           { return "" }
func (n *Net) Uplink(int) string                        { return "" }
func (n *Net) Remove() error                            { return nil }
func (n *Net) Cut(int) error                            { return CanPartition() }
func (n *Net) Command(int, string, ...string) *exec.Cmd { return nil }

// Server is a server in a host; there are none here.
type Server struct {
	Addr, Ctl string
	Proc      *launch.Proc
}

// StartRedis starts nothing here.
func (n *Net) StartRedis(context.Context, *launch.Group, string, int, int, ...string) (*Server, error) {
	return nil, CanPartition()
}

// StartSentinel starts nothing here.
func (n *Net) StartSentinel(context.Context, *launch.Group, string, int, int, string, int, time.Duration) (*Server, error) {
	return nil, CanPartition()
}
