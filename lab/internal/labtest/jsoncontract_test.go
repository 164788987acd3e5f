package labtest

import (
	"strings"
	"testing"
)

func TestMissingKeysNamesEveryKeyPathTheOutputLacks(t *testing.T) {
	want := `{"step":"s","n":1,"phases":[{"phase":"1","releases":3},{"phase":"2","cause":"x"}]}`
	got := `{"step":"s","phases":[{"phase":"1","releases":3},{"phase":"2"}],"extra":true}`
	missing, err := MissingKeys([]byte(want), []byte(got))
	if err != nil || strings.Join(missing, " ") != ".n .phases[phase 2].cause" {
		t.Errorf("MissingKeys = %q, %v; want [.n .phases[phase 2].cause]", missing, err)
	}
}

// Phases are paired by name: one added between two others changes neither,
// and one that is gone is named.
func TestMissingKeysPairsPhasesByName(t *testing.T) {
	want := `{"phases":[{"phase":"1","a":1},{"phase":"2","b":2},{"phase":"3","c":3}]}`
	got := `{"phases":[{"phase":"1","a":1},{"phase":"1b","a":1},{"phase":"2","b":2}]}`
	missing, err := MissingKeys([]byte(want), []byte(got))
	if err != nil || strings.Join(missing, " ") != ".phases[phase 3]" {
		t.Errorf("MissingKeys = %q, %v; want [.phases[phase 3]]", missing, err)
	}
}
