package wire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadReply_short(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"simple string", "+OK\r\n", "OK"},
		{"error", "-NOSCRIPT No matching script\r\n", "(error) NOSCRIPT No matching script"},
		{"integer", ":3\r\n", "(integer) 3"},
		{"bulk string", "$5\r\ntoken\r\n", `"token"`},
		{"empty bulk string", "$0\r\n\r\n", `""`},
		{"long bulk string", "$45\r\n" + strings.Repeat("a", 45) + "\r\n", `"` + strings.Repeat("a", 40) + `"…`},
		{"RESP2 null", "$-1\r\n", "(nil)"},
		{"RESP2 null array", "*-1\r\n", "(nil)"},
		{"RESP3 null", "_\r\n", "(nil)"},
		{"array", "*2\r\n$1\r\na\r\n:1\r\n", "[2 items]"},
		{"array of one", "*1\r\n*0\r\n", "[1 item]"},
		{"nested array", "*2\r\n*2\r\n:1\r\n:2\r\n$-1\r\n", "[2 items]"},
		{"map", "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", "{2 pairs}"},
		{"set", "~1\r\n+a\r\n", "[1 item]"},
		{"double", ",1.5\r\n", "(double) 1.5"},
		{"boolean", "#t\r\n", "(true)"},
		{"big number", "(12345678901234567890\r\n", "(big number) 12345678901234567890"},
		{"blob error", "!21\r\nSYNTAX invalid syntax\r\n", "(error) SYNTAX invalid syntax"},
		{"verbatim string", "=15\r\ntxt:Some string\r\n", `"Some string"`},
		{"attribute before a reply", "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*1\r\n:2\r\n", "[1 item]"},
		{"attribute inside an array", "*2\r\n|1\r\n+ttl\r\n:3\r\n:1\r\n:2\r\n", "[2 items]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := newReader(strings.NewReader(tt.in), 1<<10).readReply()
			if err != nil {
				t.Fatalf("readReply(%q): %v", tt.in, err)
			}
			if got := f.short(); got != tt.want {
				t.Errorf("short() = %s, want %s", got, tt.want)
			}
			if string(f.raw) != tt.in {
				t.Errorf("raw = %q, want every byte read: %q", f.raw, tt.in)
			}
		})
	}
}

func TestReadReply_push(t *testing.T) {
	in := ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n+OK\r\n"
	r := newReader(strings.NewReader(in), 1<<10)
	push, err := r.readReply()
	if err != nil || push.kind != '>' {
		t.Fatalf("first frame: kind %q, err %v; want a push", push.kind, err)
	}
	reply, err := r.readReply()
	if err != nil || reply.short() != "OK" {
		t.Fatalf("second frame: %q, err %v; want OK", reply.short(), err)
	}
}

func TestReadCommand_forms(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"array", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", []string{"SET", "k", ""}},
		{"binary argument", "*2\r\n$3\r\nGET\r\n$4\r\na\r\nb\r\n", []string{"GET", "a\r\nb"}},
		{"inline", "SET k v\r\n", []string{"SET", "k", "v"}},
		{"inline without \\r", "GET  k\n", []string{"GET", "k"}},
		{"empty inline line", "\r\n", nil},
		{"empty array", "*0\r\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := newReader(strings.NewReader(tt.in), 1<<10).readCommand()
			if err != nil {
				t.Fatalf("readCommand(%q): %v", tt.in, err)
			}
			if strings.Join(f.args, "|") != strings.Join(tt.want, "|") || len(f.args) != len(tt.want) {
				t.Errorf("args = %q, want %q", f.args, tt.want)
			}
			if string(f.raw) != tt.in {
				t.Errorf("raw = %q, want %q", f.raw, tt.in)
			}
		})
	}
}

func TestReader_refuses(t *testing.T) {
	big := "$2000\r\n" + strings.Repeat("x", 2000) + "\r\n"
	tests := []struct {
		name, in string
		command  bool
		want     error
	}{
		{"a bulk string past the bound", big, false, errTooBig},
		{"a line past the bound", "+" + strings.Repeat("x", 2000) + "\r\n", false, errTooBig},
		{"a command past the bound", "*2\r\n$3\r\nSET\r\n" + big, true, errTooBig},
		{"an inline command past the bound", strings.Repeat("x", 2000) + "\n", true, errTooBig},
		{"an unknown type byte", "?1\r\n", false, errProtocol},
		{"a line without \\r", "+OK\n", false, errProtocol},
		{"an empty line", "\r\n", false, errProtocol},
		{"a negative length", "$-2\r\n", false, errProtocol},
		{"a null map", "%-1\r\n", false, errProtocol},
		{"a streamed string", "$?\r\n;4\r\nHell\r\n;0\r\n", false, errProtocol},
		{"a bulk string too long for its length", "$1\r\nab\r\n", false, errProtocol},
		{"deep nesting", strings.Repeat("*1\r\n", maxDepth+2) + ":1\r\n", false, errProtocol},
		{"a command of integers", "*1\r\n:1\r\n", true, errProtocol},
		{"a cut frame", "*2\r\n:1\r\n", false, io.ErrUnexpectedEOF},
		{"a cut bulk string", "$5\r\nab", false, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReader(strings.NewReader(tt.in), 1<<10)
			read := r.readReply
			if tt.command {
				read = r.readCommand
			}
			if _, err := read(); !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
		})
	}
}

// FuzzReader reads arbitrary bytes as replies and as commands: the reader
// must not panic, must never keep more than its bound, and every frame it
// returns must be exactly the bytes it consumed, which read again give
// the same frame.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "-ERR x\r\n", ":1\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*2\r\n$1\r\na\r\n:2\r\n",
		"_\r\n", ",1.5\r\n", "#t\r\n", "(1\r\n", "!3\r\nERR\r\n", "=7\r\ntxt:abc\r\n", "%1\r\n+a\r\n+b\r\n",
		"~1\r\n+a\r\n", ">2\r\n+invalidate\r\n*1\r\n+k\r\n", "|1\r\n+a\r\n+b\r\n:1\r\n", "SET k v\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", "$?\r\n;1\r\na\r\n;0\r\n",
	} {
		f.Add([]byte(s))
	}
	const bound = 1 << 12
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, command := range []bool{false, true} {
			r := newReader(bytes.NewReader(data), bound)
			var consumed []byte
			for {
				read := r.readReply
				if command {
					read = r.readCommand
				}
				fr, err := read()
				if err != nil {
					break
				}
				if len(fr.raw) > bound {
					t.Fatalf("a frame of %d bytes, past the bound of %d", len(fr.raw), bound)
				}
				consumed = append(consumed, fr.raw...)
				if !bytes.HasPrefix(data, consumed) {
					t.Fatalf("the frames' bytes %q are not what was read: %q", consumed, data)
				}
				fr.short()
				again := newReader(bytes.NewReader(fr.raw), bound)
				read = again.readReply
				if command {
					read = again.readCommand
				}
				g, err := read()
				if err != nil || !bytes.Equal(g.raw, fr.raw) || g.kind != fr.kind || g.short() != fr.short() ||
					strings.Join(g.args, "\x00") != strings.Join(fr.args, "\x00") {
					t.Fatalf("reading %q again gave %q (%v)", fr.raw, g.raw, err)
				}
			}
		}
	})
}
