// The report is the verdict tail every program shares: it holds each
// phase's check against the lesson (internal/lesson), prints the result as
// one JSON object when asked, names on stderr every phase that did not
// give the verdict the lesson promises, and picks the exit code.
//
//	r := harness.NewReport(step)
//	r.Set("redis_version", version)
//	r.AddAt("1", 0, verdict, figures)
//	return r.Finish(stdout, stderr, asJSON)

package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/wallet"
)

// Report collects one run of a step program.
type Report struct {
	step        string
	keys        []string // Set keys, in the order first set
	values      map[string]any
	phases      []PhaseResult
	cut         *PhaseResult // the phase Ctrl-C cut short, if it measured anything
	controls    []string
	interrupted bool
	failed      bool
}

// Phase is one phase's check as the report prints it: the lesson's Result
// with the step's own figures beside it, in the same JSON object.
type PhaseResult struct {
	lesson.Result
	Workers int // the level of contention it ran at; 0: not given
	Figures any // a struct or map whose JSON keys join the Result's; nil for none
}

// New starts the report of a step, named as in lesson.Phases.
func NewReport(step string) *Report { return &Report{step: step, values: map[string]any{}} }

// Set adds a top-level JSON key, beside "step", "phases" and "interrupted".
// Setting a key again replaces its value.
func (r *Report) Set(key string, value any) {
	if _, ok := r.values[key]; !ok {
		r.keys = append(r.keys, key)
	}
	r.values[key] = value
}

// SetAll sets every key of v's JSON object, in v's order, as Set would,
// but for the keys the report writes itself (step, phases, interrupted,
// interrupted_phase).
func (r *Report) SetAll(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("report: %T is not a JSON object", v)
	}
	for dec.More() {
		key, _ := dec.Token() // a key: Marshal wrote a valid object
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		switch key {
		case "step", "phases", "interrupted", "interrupted_phase":
		default:
			r.Set(key.(string), value)
		}
	}
	return nil
}

// AddAt records a phase that ran to the end and returns its check against
// the lesson. figures go into the phase's JSON object; nil adds nothing.
// A program that runs each phase at several levels of contention (every
// strategy at each -workers count) gives workers: the phase's JSON object
// gets a "workers" key, and a line about it names the level; 0 gives none.
func (r *Report) AddAt(phase string, workers int, v wallet.Verdict, figures any) lesson.Result {
	p := r.phase(phase, v, figures)
	p.Workers = workers
	r.phases = append(r.phases, p)
	return p.Result
}

// AddResult records a phase that another program ran and judged, as the
// workshop collects every step's: it keeps its step, check and verdict.
func (r *Report) AddResult(res lesson.Result) {
	r.phases = append(r.phases, PhaseResult{Result: res})
}

// Control names a phase shown for contrast (none, no lock at all): held
// to the lesson in the JSON, but a verdict other than the lesson's does
// not make Finish fail, since with little contention no update is lost.
func (r *Report) Control(phase string) { r.controls = append(r.controls, phase) }

// Interrupt records that Ctrl-C stopped the run: Finish returns 130.
func (r *Report) Interrupt() { r.interrupted = true }

// Interrupted records the phase Ctrl-C cut short: it is printed as
// "interrupted_phase" but not held to the lesson, since it counts only the
// spends made before Ctrl-C. It also calls Interrupt.
func (r *Report) Interrupted(phase string, v wallet.Verdict, figures any) {
	p := r.phase(phase, v, figures)
	r.cut, r.interrupted = &p, true
}

// Fail prints err on stderr as "step: err" and makes Finish return 1.
func (r *Report) Fail(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "%s: %v\n", r.step, err)
	r.failed = true
}

// Phases returns the phases recorded with AddAt and AddResult, in order.
func (r *Report) Phases() []PhaseResult { return r.phases }

func (r *Report) phase(name string, v wallet.Verdict, figures any) PhaseResult {
	return PhaseResult{Result: lesson.NewResult(r.step, name, v.String(), v.OK), Figures: figures}
}

// Finish prints the JSON object on stdout when asJSON, one line on stderr
// for each phase whose verdict is not the lesson's (not after Ctrl-C, and
// never for a Control), and returns the exit code: 130
// (ExitInterrupted) after Ctrl-C, 1 when such a phase missed the
// lesson or Fail was called, 0 otherwise.
func (r *Report) Finish(stdout, stderr io.Writer, asJSON bool) int {
	if asJSON {
		if err := r.encode(stdout); err != nil {
			r.Fail(stderr, fmt.Errorf("print JSON: %w", err))
		}
	}
	if r.interrupted {
		return ExitInterrupted
	}
	code := 0
	if r.failed {
		code = 1
	}
	for _, p := range r.phases {
		if p.Step == r.step && slices.Contains(r.controls, p.Phase) {
			continue
		}
		if p.Match() {
			continue
		}
		what, _ := lesson.Lookup(p.Step, p.Phase)
		name, hint := "phase "+p.Phase, "try the defaults"
		if p.Workers > 0 {
			name += fmt.Sprintf(" at %d workers", p.Workers)
		}
		if p.Step != r.step { // collected from another program
			name, hint = p.Step+" "+name, "run it alone: go run ./cmd/"+p.Step
		}
		fmt.Fprintf(stderr, "%s: %s gave %s, the lesson says %s (%s); %s\n",
			r.step, name, p.Verdict, p.Want, what.What, hint)
		code = 1
	}
	return code
}

// encode writes one JSON object: "step", the Set keys, "phases",
// "interrupted" and, when a phase was cut short, "interrupted_phase".
func (r *Report) encode(w io.Writer) error {
	phases := r.phases
	if phases == nil {
		phases = []PhaseResult{}
	}
	keys := slices.Concat([]string{"step"}, r.keys, []string{"phases", "interrupted"})
	values := maps.Clone(r.values)
	values["step"], values["phases"], values["interrupted"] = r.step, phases, r.interrupted
	if r.cut != nil {
		keys, values["interrupted_phase"] = append(keys, "interrupted_phase"), r.cut
	}
	b := []byte{'{'}
	for i, key := range keys {
		v, err := json.Marshal(values[key])
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		k, _ := json.Marshal(key)
		b = append(append(append(b, k...), ':'), v...)
		if i < len(keys)-1 {
			b = append(b, ',')
		}
	}
	_, err := w.Write(append(b, "}\n"...))
	return err
}

// MarshalJSON writes the Result's keys, "workers" when given, and then the
// figures' keys in one object.
func (p PhaseResult) MarshalJSON() ([]byte, error) {
	res, err := json.Marshal(p.Result)
	if err == nil && p.Workers > 0 {
		res = fmt.Appendf(res[:len(res)-1], `,"workers":%d}`, p.Workers)
	}
	if err != nil || p.Figures == nil {
		return res, err
	}
	fig, err := json.Marshal(p.Figures)
	if err != nil {
		return nil, err
	}
	if len(fig) < 2 || fig[0] != '{' {
		return nil, fmt.Errorf("report: phase %s: figures are not a JSON object: %s", p.Phase, fig)
	}
	if string(fig) == "{}" {
		return res, nil
	}
	return append(append(res[:len(res)-1], ','), fig[1:]...), nil
}
