package env

// REDLOCK_ADDRS: the independent Redis nodes of the load test's Redlock,
// which cmd/servers starts with `make redlock-up`.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// DefaultRedlockAddrs are the nodes `make redlock-up` starts, unless
// REDLOCK_ADDRS names others (host:port, separated by commas).
const DefaultRedlockAddrs = "127.0.0.1:6380,127.0.0.1:6381,127.0.0.1:6382"

// MinRedlockNodes is the fewest nodes Redlock makes sense with: with one
// or two, a majority is every node, and losing one stops the lock.
const MinRedlockNodes = 3

// ErrSameRedlockNode is returned by RedlockAddrs (and redlock.Dial) when
// two of the addresses reach one Redis server.
var ErrSameRedlockNode = errors.New("redlock: not independent nodes")

// RedlockAddrs returns the Redlock nodes' addresses: REDLOCK_ADDRS, or
// DefaultRedlockAddrs. It refuses a list of fewer than MinRedlockNodes,
// and one that names one node twice, after resolving host names
// (127.0.0.1:6380 and localhost:6380 are one node): a majority of
// addresses would then not be a majority of nodes.
func RedlockAddrs() ([]string, error) {
	v := os.Getenv("REDLOCK_ADDRS")
	if strings.TrimSpace(v) == "" {
		v = DefaultRedlockAddrs
	}
	var addrs []string
	for a := range strings.SplitSeq(v, ",") {
		a = strings.TrimSpace(a)
		if err := CheckPort(a); err != nil {
			return nil, fmt.Errorf("redlock: REDLOCK_ADDRS: %w", err)
		}
		addrs = append(addrs, a)
	}
	if len(addrs) < MinRedlockNodes {
		return nil, fmt.Errorf("redlock: REDLOCK_ADDRS names %d nodes, Redlock needs at least %d", len(addrs), MinRedlockNodes)
	}
	if a, b, ok := sameAddress(addrs); ok {
		return nil, fmt.Errorf("%w: REDLOCK_ADDRS names one node twice (%s and %s are the same address): name each node once", ErrSameRedlockNode, a, b)
	}
	return addrs, nil
}

// sameAddress returns the first two of addrs that reach the same IP
// address and port. A host name is resolved within a second; one that
// does not resolve stands for itself (dialling it then finds it down).
func sameAddress(addrs []string) (string, string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	seen := map[string]int{} // ip:port -> the index of the address that reaches it
	for i, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		ips := []string{host}
		if net.ParseIP(host) == nil {
			if host == "" {
				host = "localhost" // what a dial to :port reaches
			}
			if found, err := net.DefaultResolver.LookupHost(ctx, host); err == nil {
				ips = found
			}
		}
		for _, ip := range ips {
			if p := net.ParseIP(ip); p != nil {
				ip = p.String() // one spelling per address
			}
			key := net.JoinHostPort(ip, port)
			if j, ok := seen[key]; ok && j != i {
				return addrs[j], a, true
			}
			seen[key] = i
		}
	}
	return "", "", false
}
