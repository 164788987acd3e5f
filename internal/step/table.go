package step

// What a run prints besides its check lines: each phase's result in the
// -json document, and the table steps 4 and 6 print.

import (
	"fmt"
	"reflect"
	"strings"
	"text/tabwriter"
)

// Result is one phase as -json reports it.
type Result struct {
	Step    string `json:"step"`
	Phase   string `json:"phase"`
	Check   string `json:"check"`   // the check line
	Verdict string `json:"verdict"` // OK or BROKEN, as the check line ends
	Want    string `json:"want"`    // what the lesson promises
}

// Table prints rows, a slice of structs, as a table whose columns are the
// fields' JSON names; with -json the rows go into the document under key.
func (r *Run) Table(key string, rows any) {
	r.doc[key] = rows
	if r.json {
		return
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	v := reflect.ValueOf(rows)
	for i := -1; i < v.Len(); i++ {
		var cells []string
		for j := range v.Type().Elem().NumField() {
			if i < 0 {
				name, _, _ := strings.Cut(v.Type().Elem().Field(j).Tag.Get("json"), ",")
				cells = append(cells, strings.ReplaceAll(name, "_", " "))
			} else {
				cells = append(cells, fmt.Sprint(v.Index(i).Field(j)))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	say("\n" + strings.TrimSuffix(b.String(), "\n"))
}
