package wire

// The RESP framing (RESP2 and RESP3), read one frame at a time: what a
// client sends (readCommand) and what Redis answers (readReply). Every
// frame keeps the bytes it was read from, which the proxy forwards as they
// came; the rest of a frame is what the log needs: its type, its text, how
// many items it has, and a command's arguments.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxDepth bounds how deeply aggregates nest: far more than any reply of
// Redis or of a Lua script, and a frame of "*1\r\n" repeated cannot make
// the reader recurse without end.
const maxDepth = 128

var (
	errTooBig   = errors.New("frame too big")
	errProtocol = errors.New("protocol error")
)

// frame is one RESP value as read.
type frame struct {
	raw  []byte   // the bytes it was read from, an attribute before it included
	kind byte     // its type byte: '+', '-', ':', '$', '*', and RESP3's '_', ',', '#', '!', '=', '(', '%', '~', '>'
	text string   // a string, error or number's text
	n    int      // an aggregate's items (pairs for a map); -1 for a null bulk string or array
	args []string // a command's arguments, its name first
}

// reader reads frames of at most max bytes each.
type reader struct {
	br  *bufio.Reader
	max int
	raw []byte // the frame being read
}

func newReader(r io.Reader, max int) *reader {
	return &reader{br: bufio.NewReader(r), max: max}
}

// readCommand reads one command as a client sends it: an array of bulk
// strings, or an inline command (a line of words, as typed into telnet).
// An empty array or line is a frame with no arguments, which Redis
// ignores.
func (r *reader) readCommand() (frame, error) {
	r.raw = nil
	b, err := r.br.Peek(1)
	if err != nil {
		return frame{}, err
	}
	if b[0] != '*' {
		line, err := r.line(false)
		if err != nil {
			return frame{}, err
		}
		return frame{raw: r.raw, kind: '*', args: strings.Fields(string(line))}, nil
	}
	line, err := r.line(true)
	if err != nil {
		return frame{}, err
	}
	n, err := length(line, true)
	if err != nil {
		return frame{}, err
	}
	f := frame{kind: '*', n: n, args: make([]string, 0, min(max(n, 0), 64))}
	for range n {
		line, err := r.line(true)
		if err != nil {
			return frame{}, err
		}
		if line[0] != '$' {
			return frame{}, fmt.Errorf("%w: expected '$' in a command, got %q", errProtocol, line[0])
		}
		m, err := length(line, false)
		if err != nil {
			return frame{}, err
		}
		s, err := r.bulk(m)
		if err != nil {
			return frame{}, err
		}
		f.args = append(f.args, s)
	}
	f.raw = r.raw
	return f, nil
}

// readReply reads one frame as Redis sends it: a reply, or a RESP3 push
// (kind '>'). An attribute ('|') is read together with the value it
// precedes, whose kind the frame takes.
func (r *reader) readReply() (frame, error) {
	r.raw = nil
	f, err := r.value(0)
	f.raw = r.raw
	return f, err
}

func (r *reader) value(depth int) (frame, error) {
	if depth > maxDepth {
		return frame{}, fmt.Errorf("%w: aggregates nested deeper than %d", errProtocol, maxDepth)
	}
	line, err := r.line(true)
	if err != nil {
		return frame{}, err
	}
	f := frame{kind: line[0]}
	switch f.kind {
	case '+', '-', ':', ',', '#', '(', '_':
		f.text = string(line[1:])
		return f, nil
	case '$', '!', '=':
		if f.n, err = length(line, f.kind == '$'); err != nil || f.n < 0 {
			return f, err
		}
		f.text, err = r.bulk(f.n)
		return f, err
	case '*', '~', '%', '>', '|':
		if f.n, err = length(line, f.kind == '*'); err != nil || f.n < 0 {
			return f, err
		}
		items := f.n
		if f.kind == '%' || f.kind == '|' {
			items *= 2 // key and value; n is at most max, so this cannot overflow
		}
		for range items {
			if _, err := r.value(depth + 1); err != nil {
				return f, err
			}
		}
		if f.kind == '|' {
			return r.value(depth + 1) // the value the attribute belongs to
		}
		return f, nil
	}
	return f, fmt.Errorf("%w: unknown type byte %q", errProtocol, f.kind)
}

// line reads through the next newline, and returns the line without it.
// With crlf, the line must end in "\r\n" and not be empty, as RESP's do;
// without (an inline command), a lone "\n" ends it too.
func (r *reader) line(crlf bool) ([]byte, error) {
	start := len(r.raw)
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.raw = append(r.raw, chunk...)
		if len(r.raw) > r.max {
			return nil, errTooBig
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(r.raw) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
		break
	}
	l := r.raw[start : len(r.raw)-1]
	switch {
	case crlf && (len(l) < 2 || l[len(l)-1] != '\r'):
		return nil, fmt.Errorf("%w: a line with no type byte, or that ends in \\n without \\r", errProtocol)
	case len(l) > 0 && l[len(l)-1] == '\r':
		return l[:len(l)-1], nil
	}
	return l, nil
}

// bulk reads a string of n bytes and the "\r\n" after it.
func (r *reader) bulk(n int) (string, error) {
	if n > r.max-len(r.raw)-2 {
		return "", errTooBig
	}
	start := len(r.raw)
	r.raw = append(r.raw, make([]byte, n+2)...)
	if _, err := io.ReadFull(r.br, r.raw[start:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	if r.raw[len(r.raw)-2] != '\r' || r.raw[len(r.raw)-1] != '\n' {
		return "", fmt.Errorf("%w: a bulk string not followed by \\r\\n", errProtocol)
	}
	return string(r.raw[start : start+n]), nil
}

// length reads the length in a header line such as "$5" or "*2": -1 (a
// null) only when null is allowed, never a streamed length ("$?").
func length(line []byte, null bool) (int, error) {
	s := string(line[1:])
	if s == "?" {
		return 0, fmt.Errorf("%w: streamed RESP3 frames (%c?) are not supported; Redis does not send them", errProtocol, line[0])
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < -1 || n == -1 && !null {
		return 0, fmt.Errorf("%w: bad length %q after %q", errProtocol, s, line[0])
	}
	return n, nil
}

// short is a reply as the log shows it, much as redis-cli prints it:
// OK, (nil), (integer) 3, (error) NOSCRIPT No matching script, "a value",
// [2 items].
func (f frame) short() string {
	switch f.kind {
	case '+':
		return f.text
	case '-', '!':
		return "(error) " + f.text
	case ':':
		return "(integer) " + f.text
	case ',':
		return "(double) " + f.text
	case '(':
		return "(big number) " + f.text
	case '#':
		return map[string]string{"t": "(true)", "f": "(false)"}[f.text]
	case '%':
		if f.n == 1 {
			return "{1 pair}"
		}
		return fmt.Sprintf("{%d pairs}", f.n)
	case '$', '=':
		if f.n < 0 {
			return "(nil)"
		}
		s := f.text
		if f.kind == '=' && len(s) >= 4 {
			s = s[4:] // "txt:" or "mkd:"
		}
		if len(s) > 40 {
			return strconv.Quote(s[:40]) + "…"
		}
		return strconv.Quote(s)
	case '*', '~', '>':
		if f.n < 0 {
			return "(nil)"
		}
		if f.n == 1 {
			return "[1 item]"
		}
		return fmt.Sprintf("[%d items]", f.n)
	}
	return "(nil)" // '_'
}
