// Package charts writes the pictures of a run as HTML pages that open
// offline: step 6's report (WriteLoad) and a workshop room's machines side
// by side (WriteRoom), judged against the lesson once (Judge).
//
// A workshop has bad Wi-Fi, so a page fetches nothing: its charts are
// inline SVG (gonum.org/v1/plot), its style sits in the page, and there
// is no script. The pages read the JSON the programs write, never their
// Go types, so that they read files of older and newer runs.
package charts

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
)

//go:embed page.tmpl
var files embed.FS

var pages = template.Must(template.ParseFS(files, "page.tmpl"))

// render executes a page into a buffer first, so that a failure writes
// nothing to w.
func render(w io.Writer, name string, data any) error {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		return fmt.Errorf("charts: write the %s page: %w", name, err)
	}
	_, err := b.WriteTo(w)
	return err
}
