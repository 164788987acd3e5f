package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		stop       bool
		out, err   string
		errOneLine bool
	}{
		{"no flags", nil, 0, false, "", "", false},
		{"a good flag", []string{"-n", "3"}, 0, false, "", "", false},
		{"help", []string{"-h"}, 0, true, "-n int", "", false},
		{"unknown flag", []string{"-nope"}, 2, true, "", "prog: flag provided but not defined: -nope (see -h)", true},
		{"bad value", []string{"-n", "x"}, 2, true, "", `prog: invalid value "x" for flag -n`, true},
		{"stray argument", []string{"extra"}, 2, true, "", `prog: unexpected argument "extra"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("prog", flag.ContinueOnError)
			fs.Int("n", 1, "how many")
			var stdout, stderr bytes.Buffer
			code, stop := Parse(fs, tt.args, &stdout, &stderr)
			if code != tt.code || stop != tt.stop {
				t.Fatalf("Parse(%q) = %d, %v; want %d, %v", tt.args, code, stop, tt.code, tt.stop)
			}
			if !strings.Contains(stdout.String(), tt.out) || (tt.out == "" && stdout.Len() > 0) {
				t.Errorf("stdout = %q, want it to hold %q", stdout.String(), tt.out)
			}
			if !strings.Contains(stderr.String(), tt.err) || (tt.err == "" && stderr.Len() > 0) {
				t.Errorf("stderr = %q, want it to hold %q", stderr.String(), tt.err)
			}
			if tt.errOneLine && strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr = %q, want one line", stderr.String())
			}
		})
	}
}
