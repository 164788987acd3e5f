package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer that run and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// make room: the page answers on the address given, the join line is
// printed, and Ctrl-C closes the room with exit code 0, saying where the
// documents are.
func TestServe_untilCtrlC(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx, ctrlC := context.WithCancel(t.Context())
	var out, errs syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"-serve", "-addr", "127.0.0.1:0"}, &out, &errs) }()
	page := regexp.MustCompile(`The room's page: (http://\S+/) `)
	var url string
	for deadline := time.Now().Add(time.Minute); url == ""; time.Sleep(20 * time.Millisecond) {
		if m := page.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no page announced within a minute:\n%s%s", out.String(), errs.String())
		}
	}
	if !regexp.MustCompile(`make workshop ROOM=127\.0\.0\.1:\d+/[a-z2-9]{4}-[a-z2-9]{4}\n`).MatchString(out.String()) {
		t.Errorf("no join line:\n%s", out.String())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte("walletlock workshop, live: 0 machines so far")) {
		t.Errorf("the page is not the live room's:\n%.300s", body)
	}
	ctrlC()
	if code := <-done; code != 0 || !bytes.Contains([]byte(out.String()), []byte("The room is closed")) {
		t.Errorf("after Ctrl-C: exit %d, stdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
}
