// Package workshop is the workshop's plumbing: it builds the programs once
// (the root's steps and the lab's drill), runs one with -json and reads the
// phases it reported, and keeps the JSON document a machine hands to the
// facilitator, who puts a room's documents side by side with Compare
// (room.go). cmd/workshop is its program.
package workshop

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
)

// FormatVersion is the layout of the JSON document. It only changes when
// a key changes meaning; adding keys keeps it, and Compare refuses a file
// of a newer one. Files written before the key existed are version 1.
const FormatVersion = 1

// Doc is the JSON document of one machine's run; Steps keeps each step's
// own output whole.
type Doc struct {
	Format   int                        `json:"format"`
	Host     string                     `json:"host"` // the -host label
	Go       string                     `json:"go"`
	OS       string                     `json:"os"`
	CPUs     int                        `json:"cpus"`
	Redis    string                     `json:"redis"`
	Postgres string                     `json:"postgres"`
	Started  time.Time                  `json:"started"`
	Seconds  float64                    `json:"seconds"`
	Phases   []Row                      `json:"phases"`
	Steps    map[string]json.RawMessage `json:"steps"`
	Failures []string                   `json:"failures,omitempty"`
	// The step Ctrl-C interrupted; the phases are those run before.
	Interrupted string `json:"interrupted,omitempty"`
	// Lesson is the revision of the lesson the run was held to
	// (lesson.Revision); a file without it is of revision 1, whose steps
	// lived in the lab and had other phases (lesson.Formers).
	Lesson int `json:"lesson,omitempty"`
	// Args are the flags each step ran with, beside -json and -prefix:
	// the root's step 6 does not print its load, so the room reads it here.
	Args map[string][]string `json:"args,omitempty"`
}

// Row is a phase as the document and the table give it.
type Row struct {
	lesson.Result
	Match bool `json:"match"`
}

// New starts the document of a run on this machine, labelled host: the
// Go, Redis and PostgreSQL it runs with. Both services must answer.
func New(ctx context.Context, host string) (*Doc, error) {
	doc := &Doc{
		Format:  FormatVersion,
		Host:    host,
		Go:      runtime.Version(),
		OS:      runtime.GOOS + "/" + runtime.GOARCH,
		CPUs:    runtime.NumCPU(),
		Started: time.Now().UTC().Truncate(time.Second),
		Steps:   map[string]json.RawMessage{},
		Lesson:  lesson.Revision,
		Args:    map[string][]string{},
	}
	rdb, err := env.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	if doc.Redis, err = env.RedisVersion(ctx, rdb); err != nil {
		return nil, err
	}
	pool, err := env.ConnectPostgres(ctx)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if doc.Postgres, err = env.PostgresVersion(ctx, pool); err != nil {
		return nil, err
	}
	return doc, nil
}

// Finish records the phases, each with whether it matches the lesson, and
// how long the run took.
func (doc *Doc) Finish(phases []harness.PhaseResult) {
	doc.Phases = nil
	for _, p := range phases {
		doc.Phases = append(doc.Phases, Row{p.Result, p.Match()})
	}
	doc.Seconds = time.Since(doc.Started).Round(time.Second).Seconds()
}

// Build compiles the root's programs (its steps, cmd/...) and the lab's
// drill into a new temporary directory, which the caller removes, so that
// the timings of the steps do not include compiling. Each is built in its
// own module's folder (harness.Repo), so that the workshop runs from the
// root or from lab/. The compiler's messages go to stderr.
func Build(ctx context.Context, stderr io.Writer) (string, error) {
	root, lab, err := harness.Repo(ctx)
	if err != nil {
		return "", err
	}
	bin, err := os.MkdirTemp("", "walletlock-workshop-")
	if err != nil {
		return "", err
	}
	if err := harness.Build(ctx, root, bin, stderr, "./cmd/..."); err != nil {
		os.RemoveAll(bin)
		return "", err
	}
	if err := harness.Build(ctx, lab, bin, stderr, "./cmd/drill"); err != nil {
		os.RemoveAll(bin)
		return "", err
	}
	return bin, nil
}

// Ran is what one step gave the workshop.
type Ran struct {
	Out    json.RawMessage // its -json output; nil: it printed none
	Phases []lesson.Result
	Failed error // why it gave no phases the workshop can read; nil: it did
	Killed bool  // it did not exit within harness.WaitDelay of Ctrl-C
}

// RunStep runs one step with -json and -prefix and reads the phases it
// reported. A step exits 1 when a phase misses its verdict but still
// prints its JSON: that is no failure, the phases say it. What the step
// writes to stderr goes to stderr as it comes, and into Failed. Ctrl-C
// (the end of ctx) reaches it as one interrupt.
func RunStep(ctx context.Context, bin, step, prefix string, args []string, stderr io.Writer) Ran {
	args = append([]string{"-json", "-prefix", prefix}, args...)
	var out, errb bytes.Buffer
	cmd := harness.Command(ctx, filepath.Join(bin, step), args...)
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(stderr, &errb)
	err := cmd.Run()
	var ran Ran
	var exit *exec.ExitError
	ran.Killed = errors.As(err, &exit) && !exit.Exited()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	var ok bool
	var perr error
	if ran.Out, ok = jsonDoc(out.Bytes()); !ok {
		perr = errors.New("printed no JSON")
	} else {
		ran.Phases, perr = readPhases(step, ran.Out)
	}
	if perr != nil {
		ran.Failed = fmt.Errorf("%s: %w", step, cmp.Or(err, perr))
	}
	return ran
}

// jsonDoc is a step's -json output as one JSON value: the steps print one
// document, the drill one JSON line per run, which become an array.
func jsonDoc(b []byte) (json.RawMessage, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, false
	}
	if json.Valid(b) {
		return json.RawMessage(b), true
	}
	lines := bytes.Split(b, []byte("\n"))
	for _, l := range lines {
		if !json.Valid(l) {
			return nil, false
		}
	}
	return json.RawMessage(append(append([]byte("["), bytes.Join(lines, []byte(","))...), ']')), true
}

// readPhases reads the phases a step reported: a step's "phases", each
// held to the verdict the lesson wants where the lesson knows it (a root
// step states its own, and a test holds those to the lesson), or the
// drill's rows as phases of the step "drill", named nemesis/strategy and
// judged by lesson.Drills.
func readPhases(step string, out json.RawMessage) ([]lesson.Result, error) {
	if step != lesson.DrillStep {
		var got struct{ Phases []lesson.Result }
		if err := json.Unmarshal(out, &got); err != nil {
			return nil, err
		}
		for i, r := range got.Phases {
			if p, ok := lesson.Lookup(r.Step, r.Phase); ok {
				got.Phases[i].Want = p.Want
			}
		}
		return got.Phases, nil
	}
	var rows []struct {
		Nemesis, Strategy, Check string
		OK                       bool
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, err
	}
	var phases []lesson.Result
	for _, r := range rows {
		phases = append(phases, lesson.NewResult(lesson.DrillStep, lesson.DrillPhase(r.Nemesis, r.Strategy), r.Check, r.OK))
	}
	return phases, nil
}

// Missing lists the phases the lesson promises that no step reported: a
// step that stops printing a phase must not pass unnoticed.
func Missing(phases []harness.PhaseResult) []string {
	seen := map[string]bool{}
	for _, r := range phases {
		seen[r.Step+"/"+r.Phase] = true
	}
	var out []string
	for _, p := range lesson.Phases {
		if !seen[p.Step+"/"+p.Phase] {
			out = append(out, fmt.Sprintf("%s phase %s: not reported", p.Step, p.Phase))
		}
	}
	return out
}

// Leftovers gives the commands that delete whatever a killed step wrote
// under prefix: Redis keys, and the PostgreSQL rows it owns.
func Leftovers(prefix string) string {
	redisCmd := "redis-cli --scan --pattern " + safe.Quote(env.GlobEscape(prefix)+"*") + " | xargs redis-cli del"
	if opt, err := env.RedisOptions(); err == nil {
		redisCmd = harness.RedisDelPrefix(opt, prefix)
	}
	return redisCmd + "; " + harness.PostgresDeletePrefix(prefix)
}

// WriteJSON writes the document, indented.
func (doc *Doc) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// Save writes the document to workshop-<host>.json in the current
// directory, so that a facilitator collects one file per machine without
// renaming any, and says so on stderr.
func (doc *Doc) Save(stderr io.Writer) error {
	name := "workshop-" + fileSafe(doc.Host) + ".json"
	var b bytes.Buffer
	doc.WriteJSON(&b)
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	fmt.Fprintf(stderr, "workshop: wrote %s; send it to the facilitator\n", name)
	return nil
}

// unsafeRun is a run of characters a file name should not hold.
var unsafeRun = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// fileSafe turns a host label into part of a file name: letters, digits,
// dots, dashes and underscores, every other run of characters one dash.
func fileSafe(label string) string {
	if s := strings.Trim(unsafeRun.ReplaceAllString(label, "-"), "-."); s != "" {
		return s
	}
	return "host"
}

// Hostname is the default -host: the machine's name, its first label.
func Hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	h, _, _ = strings.Cut(h, ".")
	return h
}

// PrintTable writes the table: each phase, the verdict the lesson
// promises, the one this machine gave and whether they match, then the
// failures.
func (doc *Doc) PrintTable(w io.Writer) {
	fmt.Fprintf(w, "walletlock workshop: %s %s, %d CPUs, Redis %s, PostgreSQL %s, %.0fs\n\n",
		doc.Go, doc.OS, doc.CPUs, doc.Redis, doc.Postgres, doc.Seconds)
	tab := harness.NewTable(w, "")
	tab.Row("STEP", "PHASE", "EXPECTED", "ACTUAL", "MATCH", "CHECK")
	for _, r := range doc.Phases {
		match := "yes"
		if !r.Match {
			match = "NO"
		}
		tab.Row(r.Step, r.Phase, r.Want, r.Verdict, match, r.Check)
	}
	tab.Flush()
	for _, f := range doc.Failures {
		fmt.Fprintln(w, "FAILED:", f)
	}
}
