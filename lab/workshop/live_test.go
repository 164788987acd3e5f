package workshop

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openRoom starts a live room on a loopback port, its folder a temporary
// one, closed when the test ends.
func openRoom(t *testing.T, files ...string) (*Room, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := OpenRoom("127.0.0.1:0", dir, files)
	if err != nil {
		t.Fatal(err)
	}
	go r.Serve()
	t.Cleanup(r.Close)
	return r, dir
}

// doc is a small document as make workshop writes one, labelled label.
func doc(label string) *Doc {
	return &Doc{Format: FormatVersion, Host: label, Go: "go1.26.8", OS: "linux/amd64", CPUs: 2, Redis: "7.0.15",
		Postgres: "15.18", Started: time.Date(2025, 12, 6, 10, 0, 0, 0, time.UTC), Steps: map[string]json.RawMessage{},
		Lesson: 2}
}

// page is the room's page as a browser gets it, with its headers.
func page(t *testing.T, r *Room) (string, http.Header) {
	t.Helper()
	addr, _, _ := strings.Cut(r.Line, "/")
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.Header
}

// A laptop's document lands on the page and in the room's folder, beside
// a file of an earlier version put there by hand; the page loads itself
// again, and neither runs nor fetches anything.
func TestRoom_aDocumentArrivesBesideAFileByHand(t *testing.T) {
	old := filepath.Join("..", "cmd", "workshop", "testdata", "workshop-lab-b.json")
	r, dir := openRoom(t, old)
	before, _ := page(t, r)
	if err := SendDoc(t.Context(), r.Line, doc("ana")); err != nil {
		t.Fatalf("SendDoc: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "workshop-ana.json")); err != nil {
		t.Errorf("the room did not save the document: %v", err)
	}
	after, h := page(t, r)
	for _, want := range []string{">ana<", ">lab-b<", `<meta http-equiv="refresh" content="3"/>`, "listens on these addresses only: " + strings.Split(r.Line, "/")[0]} {
		if !strings.Contains(after, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if strings.Contains(before, ">ana<") {
		t.Error("the page showed ana before its document came")
	}
	if strings.Contains(after, r.Line[strings.Index(r.Line, "/")+1:]) {
		t.Error("the page shows the join code: anyone who can read the page could send documents")
	}
	if strings.Contains(after, "<script") || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("the page may run a script: CSP %q", h.Get("Content-Security-Policy"))
	}
}

// Every document the room must not take is refused with a reason, the
// page says so, and no file of the room changes.
func TestRoom_refusesWhatItMustNotTake(t *testing.T) {
	r, dir := openRoom(t)
	if err := SendDoc(t.Context(), r.Line, doc("ana")); err != nil {
		t.Fatal(err)
	}
	saved, _ := os.ReadFile(filepath.Join(dir, "workshop-ana.json"))
	addr, code, _ := strings.Cut(r.Line, "/")
	var big bytes.Buffer
	big.WriteString(`{"host":"big","go":"x","steps":{},"pad":"`)
	big.WriteString(strings.Repeat("x", maxDoc))
	big.WriteString(`"}`)
	var ctl bytes.Buffer
	doc("evil\x1b[2J").WriteJSON(&ctl)
	var ana bytes.Buffer
	doc("ana").WriteJSON(&ana)
	for _, c := range []struct {
		name, code string
		from       string // the local address to send from; "" any
		body       []byte
		want       string
	}{
		{"no code", "", "", ana.Bytes(), "no join code, or not the room's"},
		{"another code", "abcd-efgh", "", ana.Bytes(), "no join code, or not the room's"},
		{"oversized", code, "", big.Bytes(), "larger than 256 KiB"},
		{"control characters", code, "", ctl.Bytes(), "control character (U+001B)"},
		{"not a document", code, "", []byte(`{"phases": []}`), "not a workshop JSON file"},
		{"another laptop's label", code, "127.0.0.2", ana.Bytes(), "the label ana is another laptop's"},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := http.DefaultClient
			if c.from != "" {
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(c.from)}}
				client = &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
			}
			req, _ := http.NewRequestWithContext(context.Background(), "POST", "http://"+addr+"/doc", bytes.NewReader(c.body))
			req.Header.Set(codeHeader, c.code)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode == http.StatusOK || !strings.Contains(string(b), c.want) {
				t.Errorf("got %d %q, want a refusal saying %q", resp.StatusCode, b, c.want)
			}
			p, _ := page(t, r)
			if !strings.Contains(p, "refused a document from") {
				t.Error("the page does not say what it refused")
			}
		})
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 1 {
		t.Errorf("the room's folder holds %q, want ana's document alone", names)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "workshop-ana.json")); !bytes.Equal(now, saved) {
		t.Error("ana's document changed")
	}
	if p, _ := page(t, r); strings.Contains(p, "\x1b") {
		t.Error("the page holds an escape character")
	}
}

// A join line is the room's address and its code; anything else is
// refused in a line that shows one.
func TestSplitLine(t *testing.T) {
	for line, want := range map[string]string{
		"10.0.0.1:8080/k7d2-p9xq":          "http://10.0.0.1:8080 k7d2-p9xq",
		" http://10.0.0.1:8080/k7d2-p9xq ": "http://10.0.0.1:8080 k7d2-p9xq",
		"10.0.0.1:8080":                    "error",
		"k7d2-p9xq":                        "error",
		"10.0.0.1/k7d2":                    "error",
	} {
		base, code, err := splitLine(line)
		got := base + " " + code
		if err != nil {
			got = "error"
			if !strings.Contains(err.Error(), "192.168.1.10:8080/k7d2-p9xq") {
				t.Errorf("splitLine(%q): %v: shows no join line", line, err)
			}
		}
		if got != want {
			t.Errorf("splitLine(%q) = %q, want %q", line, got, want)
		}
	}
}
