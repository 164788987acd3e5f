package harness

import (
	"fmt"
	"io"
	"text/tabwriter"

	"example.com/walletlock/internal/safe"
)

// Table is the lab's one table writer: rows of cells in columns two
// spaces apart, for a program's terminal report. Every cell is put on one
// line with its unprintable characters escaped (safe.Line), so that a tab
// or a newline in a label read from a file or a server cannot break the
// columns, nor a control character reach the terminal.
type Table struct {
	tw     *tabwriter.Writer
	indent string
}

// NewTable returns a table that writes to w when flushed, each line
// starting with indent, its columns aligned left.
func NewTable(w io.Writer, indent string) *Table {
	return &Table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), indent: indent}
}

// Row adds a row; each cell is written as fmt.Sprint writes it.
func (t *Table) Row(cells ...any) {
	io.WriteString(t.tw, t.indent)
	for i, c := range cells {
		if i > 0 {
			io.WriteString(t.tw, "\t")
		}
		io.WriteString(t.tw, safe.Line(fmt.Sprint(c)))
	}
	io.WriteString(t.tw, "\n")
}

// Flush writes the table, its columns as wide as their widest cell.
func (t *Table) Flush() error { return t.tw.Flush() }
