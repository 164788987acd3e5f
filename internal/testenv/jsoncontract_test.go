package testenv

import (
	"strings"
	"testing"
)

func TestMissingKeysNamesEveryKeyPathTheOutputLacks(t *testing.T) {
	want := `{"step":"s","n":1,"phases":[{"phase":"1","releases":3},{"phase":"2","cause":"x"}]}`
	got := `{"step":"s","phases":[{"phase":"1","releases":3},{"phase":"2"}],"extra":true}`
	missing, err := missingKeys([]byte(want), []byte(got))
	if err != nil || strings.Join(missing, " ") != ".n .phases[1].cause" {
		t.Errorf("missingKeys = %q, %v; want [.n .phases[1].cause]", missing, err)
	}
}
