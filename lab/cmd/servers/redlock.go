package main

// The three independent Redis nodes of step 6's redlock strategy
// (REDLOCK_ADDRS, read by internal/env; by default 127.0.0.1:6380,
// 6381 and 6382): local redis-server processes with no persistence, their
// files in .services/redlock-PORT/. A node that already answers is used as
// it is; redlock-down (and down) stop only the nodes redlock-up started.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/launch"
)

func redlockNodes() ([]string, error) {
	addrs, err := env.RedlockAddrs()
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "redlock: "))
	}
	return addrs, nil
}

func redlockList(addrs []string) string {
	if v := os.Getenv("REDLOCK_ADDRS"); strings.TrimSpace(v) != "" {
		return v
	}
	return strings.Join(addrs, ",")
}

func (m *machine) redlockUp(ctx context.Context) (err error) {
	addrs, err := redlockNodes()
	if err != nil {
		return err
	}
	var need []string
	for _, addr := range addrs {
		host, port, _ := net.SplitHostPort(addr)
		if launch.Answers(addr) {
			continue
		}
		if reachable(host, port) {
			return fmt.Errorf("the Redlock node %s is taken by something that is not Redis: stop it, or change REDLOCK_ADDRS", addr)
		}
		if !isLocal(host) {
			return fmt.Errorf("the Redlock node %s does not answer, and that is not this machine: start it there, or change REDLOCK_ADDRS", addr)
		}
		need = append(need, addr)
	}
	if len(need) > 0 {
		if err := m.redisServer(ctx, fmt.Sprintf("nothing answers at %s and redis-server is not installed", strings.Join(need, " "))); err != nil {
			return err
		}
	}
	// A redlock-up that fails half-way (Ctrl-C too) stops the nodes it
	// started.
	var startedHere []*record
	defer func() {
		for _, r := range startedHere {
			if err != nil {
				r.Stop()
				r.remove()
			}
		}
	}()
	for _, addr := range need {
		host, port, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(port)
		// No persistence, on purpose: a node that restarts comes back
		// empty, which is what the drill shows Redlock cannot survive.
		rec, err := m.startRedis(ctx, m.state("redlock-"+port), bindFor(host), n)
		if err != nil {
			return fmt.Errorf("the Redlock node on port %s did not start (%w)", port, err)
		}
		startedHere = append(startedHere, rec)
	}
	already := ""
	if n := len(addrs) - len(need); n > 0 {
		already = fmt.Sprintf(", %d already running", n)
	}
	m.say("Redlock nodes: %d of %d answer at %s (started %d here%s)", len(addrs), len(addrs), redlockList(addrs), len(need), already)
	return nil
}

func (m *machine) redlockDown(context.Context) error {
	files, _ := filepath.Glob(m.state("redlock-*", "started"))
	var errs []error
	for _, f := range files {
		r, err := m.readRecord(f, "redis-server", filepath.Dir(f))
		if err == nil && r != nil {
			err = m.stopRecorded(r, "the Redlock node")
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (m *machine) redlockStatus(context.Context) error {
	addrs, err := redlockNodes()
	if err != nil {
		return err
	}
	var down, other []string
	for _, addr := range addrs {
		host, port, _ := net.SplitHostPort(addr)
		switch {
		case launch.Answers(addr):
		case reachable(host, port):
			other = append(other, addr)
		default:
			down = append(down, addr)
		}
	}
	if len(down)+len(other) == 0 {
		m.say("Redlock nodes: %d of %d answer at %s", len(addrs), len(addrs), redlockList(addrs))
		return nil
	}
	var why []string
	if len(down) > 0 {
		why = append(why, "nothing at "+strings.Join(down, " ")+": make redlock-up")
	}
	if len(other) > 0 {
		why = append(why, "something that is not Redis at "+strings.Join(other, " ")+": stop it, or change REDLOCK_ADDRS")
	}
	m.say("Redlock nodes: %d of %d answer (%s)", len(addrs)-len(down)-len(other), len(addrs), strings.Join(why, "; "))
	return errSaid
}
