package labtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"testing"

	"example.com/walletlock/internal/testenv"
)

// JSONKeepsKeys runs a program with -json and checks that its output still
// has every key path of testdata/json-contract.json, a real run's output:
// the JSON is a contract with files people keep.
func JSONKeepsKeys(t *testing.T, run Program, args ...string) {
	t.Helper()
	rdb := testenv.Redis(t)
	args = append([]string{"-json", "-prefix", Prefix(t, rdb)}, args...)
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("run = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	want, err := os.ReadFile("testdata/json-contract.json")
	if err != nil {
		t.Fatal(err)
	}
	missing, err := MissingKeys(want, stdout.Bytes())
	if err != nil || len(missing) > 0 {
		t.Errorf("missing keys %q (%v) in\n%s", missing, err, stdout.String())
	}
}

// MissingKeys returns the key paths of the JSON object want (within each
// element of an array too) that got lacks. Elements that carry a "phase"
// name are paired by it, not by position, so that a phase added between
// two others is no change to theirs.
func MissingKeys(want, got []byte) ([]string, error) {
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return nil, fmt.Errorf("labtest: read the reference: %w", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return nil, fmt.Errorf("labtest: read the output: %w", err)
	}
	var missing []string
	var walk func(path string, w, g any)
	walk = func(path string, w, g any) {
		switch w := w.(type) {
		case map[string]any:
			g, _ := g.(map[string]any)
			for k, v := range w {
				gv, ok := g[k]
				if !ok {
					missing = append(missing, path+"."+k)
					continue
				}
				walk(path+"."+k, v, gv)
			}
		case []any:
			g, _ := g.([]any)
			for i, v := range w {
				if name, ok := phaseName(v); ok { // a phase keeps its keys wherever new phases go
					at := fmt.Sprintf("%s[phase %s]", path, name)
					j := slices.IndexFunc(g, func(gv any) bool { gname, _ := phaseName(gv); return gname == name })
					if j < 0 {
						missing = append(missing, at)
						continue
					}
					walk(at, v, g[j])
					continue
				}
				if i < len(g) {
					walk(fmt.Sprintf("%s[%d]", path, i), v, g[i])
				}
			}
		}
	}
	walk("", w, g)
	sort.Strings(missing)
	return missing, nil
}

// phaseName is the "phase" of a JSON object, if it has one.
func phaseName(v any) (string, bool) {
	m, _ := v.(map[string]any)
	name, ok := m["phase"].(string)
	return name, ok
}
