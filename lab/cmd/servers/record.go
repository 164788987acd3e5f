package main

// What .services keeps about each server this checkout started, and how
// `down` tells a server of its own from any other.
//
// A record is written before the server starts (so that an `up` killed
// half-way leaves a server that `down` still finds) and again once it
// runs. It names the checkout that wrote it: a copy of the checkout (cp
// -a after `up`) carries the original's records along, and must neither
// stop the original's servers nor remove their data. `down` signals a
// process only when the record is this checkout's and the process is the
// one recorded (launch.Daemon.Check).
//
// Where they are: .services/redis-PORT/started, .services/pg.started
// (whose folder may be outside the checkout, see pgHome),
// .services/redlock-PORT/started and .services/cluster-FIRST/PORT/started.
// Versions before these records wrote the port alone, in
// .services/redis.started, .services/pg.started (with .services/pg.dir)
// and .services/redlock-PORT/started; those are read too.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"example.com/walletlock/lab/internal/launch"
)

// record is what .services keeps about a server this checkout started.
type record struct {
	launch.Daemon
	// Checkout is the .services folder of the checkout that started the
	// server, or "" when an older version wrote the record and that
	// cannot be told.
	Checkout string `json:"checkout"`
	file     string // where the record is kept
}

// home is this checkout's .services folder, as one spelling of it: the
// same whichever symbolic link the program was run through.
func (m *machine) home() string {
	dir := m.state()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// newRecord is the record, kept in file, of a server of kind this
// checkout is about to start on port, serving dir.
func (m *machine) newRecord(file, kind string, port int, dir string) *record {
	return &record{Daemon: launch.Daemon{Kind: kind, Port: port, Dir: dir}, Checkout: m.home(), file: file}
}

// save writes the record, whole or not at all.
func (r *record) save() error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := r.file + ".new"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write the record of the %s it starts: %w; make .services writable", r.Kind, err)
	}
	if err := os.Rename(tmp, r.file); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write the record of the %s it starts: %w; make .services writable", r.Kind, err)
	}
	return nil
}

// remove deletes the record.
func (r *record) remove() error { return removeState(r.file) }

// readRecord reads the record in file: nil when there is none. A record
// of an older version (the port alone) is completed with kind and
// legacyDir, the folder that version kept that server in, and is this
// checkout's when that folder is inside it (Check then proves the
// process serves this very folder, which a copy's cannot).
func (m *machine) readRecord(file, kind, legacyDir string) (*record, error) {
	raw, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", file, err)
	}
	r := &record{file: file}
	if port, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil {
		r.Daemon = launch.Daemon{Kind: kind, Port: port, Dir: legacyDir}
		if inside(legacyDir, m.state()) {
			r.Checkout = m.home()
		}
		return r, nil
	}
	if err := json.Unmarshal(raw, r); err != nil || r.Kind != kind || r.Port <= 0 || r.Dir == "" {
		return nil, fmt.Errorf("%s is not a record this program wrote; if no server of this checkout runs, remove it", file)
	}
	return r, nil
}

// inside reports whether path is in the folder dir.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// ours reports whether this checkout started the server of r.
func (m *machine) ours(r *record) bool { return r.Checkout != "" && r.Checkout == m.home() }

// running reports whether the server r names runs, as r's: this
// checkout's record, and the very process it recorded.
func (m *machine) running(r *record) bool { return m.ours(r) && r.Check() == nil }

// stopRecorded stops the server of r when this checkout started it and
// it still runs, says what it did, and removes r. Another checkout's
// server (this one is a copy) it leaves running; when r cannot say whose
// it is, it says how to stop it and keeps r.
func (m *machine) stopRecorded(r *record, what string) error {
	where := fmt.Sprintf("%s on port %d", what, r.Port)
	switch {
	case r.Checkout == "":
		pid := "<pid>"
		if r.Check() == nil {
			pid = strconv.Itoa(r.Pid)
		}
		m.say("%s: an older version wrote %s and did not record which checkout started it; if this one did, stop it with: kill -INT %s; then remove %s", where, r.file, pid, r.file)
		return errSaid
	case !m.ours(r):
		m.say("%s: started by the checkout at %s, not this copy of it: left running", where, filepath.Dir(r.Checkout))
	default:
		err := r.Stop()
		switch {
		case err == nil:
			m.say("stopped %s (pid %d)", where, r.Pid)
		case errors.Is(err, launch.ErrNotOurs):
			m.say("%s was not running (%s)", where, strings.TrimPrefix(err.Error(), launch.ErrNotOurs.Error()+": "))
		default:
			return err
		}
	}
	return r.remove()
}
