package workshop

// The live room (make room): one program on the facilitator's laptop
// serves the room's page over HTTP on the one address the facilitator
// chose, and takes each laptop's document as `make workshop ROOM=<join
// line>` hands it in. Documents are files: each one that arrives is saved
// in the room's folder as workshop-<label>.json, where a file put there by
// hand is read the same way, so that the page shows both and `make
// compare` afterwards shows the same room. The page is Compare's, drawn
// again whenever the folder changes, and loads itself again every few
// seconds with a <meta http-equiv="refresh">: a short poll, no script.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"example.com/walletlock/lab/internal/charts"
	"example.com/walletlock/lab/internal/harness"
)

const (
	// maxDoc bounds a document sent to the room: today's are about 14 KB,
	// the largest kept (step 6 with every strategy) 32 KB.
	maxDoc = 256 << 10
	// refresh is how often, in seconds, the page loads itself again.
	refresh = 3
	// codeHeader carries the join code in every request but the page's.
	codeHeader = "Room-Code"
)

// Room is the live room: its page, the documents it takes and, with the
// race, the laptops that join it (race.go).
type Room struct {
	// Line is what a participant gives as ROOM=: the room's address and
	// its join code, "192.168.1.10:8080/k7d2-p9xq".
	Line string

	// Listen says every address the room listens on, with what for.
	Listen []string

	code   string
	dir    string
	files  []string // named by hand on the command line, read beside the folder's
	asked  string   // the address the facilitator chose, as given
	ln     net.Listener
	mux    *http.ServeMux
	srv    *http.Server
	race   *race // nil: a room without the race
	closed chan struct{}
	once   sync.Once

	mu    sync.Mutex
	sent  map[string]string // a file the room saved, and the address that sent it
	notes []string          // the latest attempts refused, for the page
	drawn string            // what the page was drawn from
	page  []byte
}

// OpenRoom listens on addr (host:port) for the room whose documents are
// the workshop-*.json files of dir, and files beside them. Serve serves
// it; Close ends it.
func OpenRoom(addr, dir string, files []string) (*Room, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w (name another address with ADDR=host:port)", harness.Printable(addr), err)
	}
	r := &Room{code: newCode(), dir: dir, files: files, asked: addr, ln: ln, mux: http.NewServeMux(), sent: map[string]string{}, closed: make(chan struct{})}
	r.Line = ln.Addr().String() + "/" + r.code
	r.Listen = []string{ln.Addr().String() + " (this page, documents, joins)"}
	r.mux.HandleFunc("GET /{$}", r.servePage)
	r.mux.HandleFunc("POST /doc", r.takeDoc)
	// A stray client's bad request is no business of the facilitator's
	// terminal: the server's own log goes nowhere.
	r.srv = &http.Server{Handler: r.mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		MaxHeaderBytes: 16 << 10, ErrorLog: log.New(io.Discard, "", 0)}
	return r, nil
}

// Serve answers the room's requests until Close.
func (r *Room) Serve() error {
	if err := r.srv.Serve(r.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close stops listening, ends the requests that wait (a race's), waits a
// few seconds for the others, and removes the race's servers.
func (r *Room) Close() {
	r.once.Do(func() {
		close(r.closed)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		r.srv.Shutdown(ctx)
		if r.race != nil {
			r.race.s.close() // the race's servers, their keys and rows with them
		}
	})
}

// newCode is a join code: eight characters that read aloud without
// confusion (no 0/o, 1/l/i), about 40 bits.
func newCode() string {
	const letters = "abcdefghjkmnpqrstuvwxyz23456789"
	b := make([]byte, 8)
	rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// codeOK reports whether a request carries the room's join code.
func (r *Room) codeOK(req *http.Request) bool {
	got := strings.ToLower(strings.TrimSpace(req.Header.Get(codeHeader)))
	return subtle.ConstantTimeCompare([]byte(got), []byte(r.code)) == 1
}

// refuse answers a request with a status and one line, and notes the
// attempt for the page.
func (r *Room) refuse(w http.ResponseWriter, req *http.Request, status int, what, why string) {
	from, _, _ := net.SplitHostPort(req.RemoteAddr)
	note := fmt.Sprintf("%s: refused %s from %s: %s", time.Now().Format("15:04:05"), what, from, why)
	r.mu.Lock()
	r.notes = append(r.notes, harness.Printable(note))
	if len(r.notes) > 8 {
		r.notes = r.notes[1:]
	}
	r.mu.Unlock()
	http.Error(w, "workshop room: "+why, status)
}

// takeDoc takes one laptop's document: the join code, at most maxDoc
// bytes, no control character anywhere in its text, and a document that
// make compare reads; then it is saved as workshop-<label>.json, unless
// that label is another laptop's or a file put in the folder by hand.
func (r *Room) takeDoc(w http.ResponseWriter, req *http.Request) {
	const what = "a document"
	if !r.codeOK(req) {
		r.refuse(w, req, http.StatusForbidden, what, "no join code, or not the room's: copy the join line the facilitator's terminal printed (ROOM=...)")
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxDoc))
	if err != nil {
		r.refuse(w, req, http.StatusRequestEntityTooLarge, what, fmt.Sprintf("larger than %d KiB, or cut short: a workshop document is about 15 KB; send the one make workshop JSON=1 wrote", maxDoc>>10))
		return
	}
	if c := controlChar(data); c != "" {
		r.refuse(w, req, http.StatusBadRequest, what, "it holds a control character ("+c+"): a workshop document is plain text")
		return
	}
	var head struct{ Host string }
	json.Unmarshal(data, &head)
	name := "workshop-" + fileSafe(head.Host) + ".json"
	m, err := parseMachine(data, name)
	if err == nil && strings.TrimSpace(head.Host) == "" {
		err = errors.New("it has no label (host): make workshop gives every document one")
	}
	if err != nil {
		r.refuse(w, req, http.StatusBadRequest, what, err.Error())
		return
	}
	from, _, _ := net.SplitHostPort(req.RemoteAddr)
	path := filepath.Join(r.dir, name)
	r.mu.Lock()
	by, ok := r.sent[name]
	taken := ok && by != from || !ok && exists(path)
	if !taken {
		if err = writeFile(path, data); err == nil {
			r.sent[name] = from
		}
	}
	r.mu.Unlock()
	switch {
	case taken:
		r.refuse(w, req, http.StatusConflict, what, fmt.Sprintf("the label %s is another laptop's, or a file's put in the room's folder by hand: run again with LABEL=another-name", m.Label))
		return
	case err != nil:
		http.Error(w, "workshop room: "+harness.Printable(err.Error()), http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "workshop room: %s is on the room's page (%s)\n", m.Label, name)
}

// controlChar names the first control character in a JSON document's
// text, its keys too, a newline and a tab apart (a step's error may quote
// its stderr); "" when there is none before the document ends or stops
// being JSON.
func controlChar(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		s, _ := tok.(string)
		for _, c := range s {
			if (c < 0x20 && c != '\n' && c != '\t') || (c >= 0x7f && c < 0xa0) {
				return fmt.Sprintf("%U", c)
			}
		}
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// writeFile writes a document whole or not at all: a page drawn meanwhile
// never reads half of one.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".workshop-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	os.Chmod(tmp.Name(), 0o644)
	return os.Rename(tmp.Name(), path)
}

// servePage serves the page, drawn again only when the folder or the race
// changed since. Its Content-Security-Policy lets the browser run no
// script and fetch nothing, whatever a document says.
func (r *Room) servePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.Write(r.draw())
}

// files are the room's documents: the folder's workshop-*.json, then the
// files named by hand.
func (r *Room) documents() []string {
	names, _ := filepath.Glob(filepath.Join(r.dir, "workshop-*.json"))
	for _, f := range r.files {
		if !slices.ContainsFunc(names, func(n string) bool { return sameFile(n, f) }) {
			names = append(names, f)
		}
	}
	return names
}

func sameFile(a, b string) bool {
	x, errA := os.Stat(a)
	y, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(x, y)
}

// draw is the page of what the room holds now.
func (r *Room) draw() []byte {
	names := r.documents()
	var sig strings.Builder
	for _, n := range names {
		if fi, err := os.Stat(n); err == nil {
			fmt.Fprintf(&sig, "%s %d %d\n", n, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	var race *charts.Race
	if r.race != nil {
		race = r.race.view()
		fmt.Fprintf(&sig, "race %v\n", *race)
	}
	r.mu.Lock()
	fmt.Fprintf(&sig, "notes %q\n", r.notes)
	notes := slices.Clone(r.notes)
	if sig.String() == r.drawn {
		defer r.mu.Unlock()
		return r.page
	}
	r.mu.Unlock()

	var machines []charts.Machine
	for _, n := range names {
		m, err := readMachine(n)
		if err != nil {
			notes = append(notes, "Not shown: "+err.Error())
			continue
		}
		machines = append(machines, m)
	}
	uniqueLabels(machines)
	live := &charts.Live{Refresh: refresh, Listen: r.Listen, Updated: time.Now().Format("15:04:05"), Notes: notes, Race: race}
	var b bytes.Buffer
	room, err := charts.Judge(machines)
	if err == nil {
		err = charts.WriteLive(&b, room, live)
	}
	if err != nil { // a page of no machine, saying why
		b.Reset()
		live.Notes = append(live.Notes, "The page could not be drawn: "+harness.Printable(err.Error()))
		empty, _ := charts.Judge(nil)
		charts.WriteLive(&b, empty, live)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drawn, r.page = sig.String(), b.Bytes()
	return r.page
}

// SendDoc hands the document to the room of the join line: the file the
// run wrote stays the participant's copy either way.
func SendDoc(ctx context.Context, line string, doc *Doc) error {
	var b bytes.Buffer
	doc.WriteJSON(&b)
	return call(ctx, line, "/doc", b.Bytes(), nil, nil)
}

// splitLine reads a join line: the room's base URL and its code.
func splitLine(line string) (base, code string, err error) {
	s := strings.TrimPrefix(strings.TrimSpace(line), "http://")
	addr, code, _ := strings.Cut(s, "/")
	if _, _, err := net.SplitHostPort(addr); err != nil || strings.TrimSpace(code) == "" {
		return "", "", fmt.Errorf("ROOM=%s is not a join line: copy the one make room printed, such as 192.168.1.10:8080/k7d2-p9xq", harness.Printable(line))
	}
	return "http://" + addr, strings.TrimSpace(code), nil
}

// call sends body (JSON; nil: a GET) to the room's path and decodes its
// answer into out, unless out is nil or the room had nothing to say
// (204). who, when set, is the laptop that asks. A refusal is an error
// with the room's reason.
func call(ctx context.Context, line, path string, body []byte, out any, who *Creds) error {
	base, code, err := splitLine(line)
	if err != nil {
		return err
	}
	method := http.MethodPost
	if body == nil {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set(codeHeader, code)
	req.Header.Set("Content-Type", "application/json")
	if who != nil {
		req.Header.Set("Room-Name", who.Name)
		req.Header.Set("Room-Password", who.Password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the room at %s did not answer (%v): is the facilitator's make room running, and this laptop on its network?", strings.TrimPrefix(base, "http://"), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusNoContent || out == nil && resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode != http.StatusOK:
		return errors.New(harness.Printable(strings.TrimSpace(string(answer))))
	}
	return json.Unmarshal(answer, out)
}
