package main

// The three independent Redis nodes of step 6's redlock strategy
// (REDLOCK_ADDRS, read by internal/services; by default 127.0.0.1:6380,
// 6381 and 6382): local redis-server processes with no persistence, their
// files in .services/redlock-PORT/. A node that already answers is used as
// it is; redlock-down (and down) stop only the nodes redlock-up started.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/services"
)

func redlockNodes() ([]string, error) {
	addrs, err := services.RedlockAddrs()
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

func (m *machine) redlockUp(ctx context.Context) error {
	addrs, err := redlockNodes()
	if err != nil {
		return err
	}
	var need []string
	answered, started := 0, 0
	for _, addr := range addrs {
		host, port, _ := net.SplitHostPort(addr)
		if reachable(host, port) {
			answered++
			continue
		}
		if !isLocal(host) {
			return fmt.Errorf("the Redlock node %s does not answer, and that is not this machine: start it there, or change REDLOCK_ADDRS", addr)
		}
		need = append(need, addr)
	}
	if len(need) > 0 {
		if m.goos == "windows" {
			return errors.New(windowsAdvice)
		}
		if _, err := exec.LookPath("redis-server"); err != nil {
			if err := m.install(ctx, fmt.Sprintf("nothing answers at %s and redis-server is not installed", strings.Join(need, " ")), "redis-server", "redis"); err != nil {
				return err
			}
		}
	}
	for _, addr := range need {
		host, port, _ := net.SplitHostPort(addr)
		bind := "127.0.0.1"
		if host == "::1" {
			bind = host
		}
		dir := m.state("redlock-" + port)
		// No persistence, on purpose: a node that restarts comes back
		// empty, which is what the drill shows Redlock cannot survive.
		n, _ := strconv.Atoi(port)
		if err := launch.StartRedisDaemon(ctx, dir, bind, n); err != nil {
			return fmt.Errorf("the Redlock node on port %s did not start (%v)", port, err)
		}
		os.WriteFile(filepath.Join(dir, "started"), []byte(port+"\n"), 0o644)
		started++
		answered++
	}
	already := ""
	if answered > started {
		already = fmt.Sprintf(", %d already running", answered-started)
	}
	m.say("Redlock nodes: %d of %d answer at %s (started %d here%s)", answered, len(addrs), redlockList(addrs), started, already)
	return nil
}

func (m *machine) redlockDown(context.Context) error {
	files, _ := filepath.Glob(m.state("redlock-*", "started"))
	for _, f := range files {
		launch.StopDaemon(filepath.Join(filepath.Dir(f), "redis.pid"), "redis-server")
		os.Remove(f)
	}
	if len(files) > 0 {
		m.say("stopped %d Redlock node(s)", len(files))
	}
	return nil
}

func (m *machine) redlockStatus(context.Context) error {
	addrs, err := redlockNodes()
	if err != nil {
		return err
	}
	var down []string
	for _, addr := range addrs {
		host, port, _ := net.SplitHostPort(addr)
		if !reachable(host, port) {
			down = append(down, addr)
		}
	}
	if len(down) == 0 {
		m.say("Redlock nodes: %d of %d answer at %s", len(addrs), len(addrs), redlockList(addrs))
		return nil
	}
	m.say("Redlock nodes: %d of %d answer (nothing at %s): make redlock-up", len(addrs)-len(down), len(addrs), strings.Join(down, " "))
	return errSaid
}
