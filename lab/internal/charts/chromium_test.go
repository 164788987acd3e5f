package charts

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// chromium finds a headless browser, or skips the test (fails it under
// CI, which installs one: see .ci/run).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	msg := "chromium is not installed: apt-get install chromium to see the pages render"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "\n\tCI is set, so this fails instead of skipping")
	}
	t.Skip(msg)
	return ""
}

// screenshot opens file in headless chromium with the network off and
// returns the screenshot of its first 1280x2000 pixels.
func screenshot(t *testing.T, browser, file string) image.Image {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--screenshot="+shot, "--window-size=1280,2000", "file://"+file)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return img
}

// inked is the share of the screenshot's pixels that are not white, and
// how many colours it has: a blank or broken page has almost none.
func inked(img image.Image) (share float64, colours int) {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				n++
			}
		}
	}
	return float64(n) / float64(b.Dx()*b.Dy()/4), len(seen)
}

// The pages render in a real browser, offline: the sweep's report and a
// room of three machines each fill the window with text and charts.
func TestPages_renderInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	pages := map[string][]byte{
		"report.html": writeLoad(t, readTestdata(t, "step6-sweep.json")),
		"room.html":   writeRoom(t, room(t)),
	}
	for name, html := range pages {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name)
			if err := os.WriteFile(file, html, 0o644); err != nil {
				t.Fatal(err)
			}
			img := screenshot(t, browser, file)
			if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
				t.Errorf("screenshot is %dx%d, want 1280x2000", b.Dx(), b.Dy())
			}
			// Measured: about 20% inked and hundreds of colours (the charts'
			// fills and anti-aliased text); a blank page is 0% and one colour.
			share, colours := inked(img)
			if share < 0.05 || colours < 50 {
				t.Errorf("screenshot is %.1f%% inked with %d colours: the page looks empty", 100*share, colours)
			}
		})
	}
}
