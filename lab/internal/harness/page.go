package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"example.com/walletlock/lab/internal/history"
)

// A page a program writes at the end of its run (-history, -html) is
// checked before any work by opening it the way the write will, so that
// one that cannot be written is refused at once, not after minutes of
// work. Both open it without blocking and refuse anything but a regular
// file: a named pipe nobody reads would hold the write forever.

// CheckPageOf refuses a page the program could not write at the end:
// path, named by flag, must be a regular file it may write, or a new file
// in a folder that takes one (made, and removed again). The error names
// the flag and the fix.
func CheckPageOf(flag, path string) error {
	shown := Printable(path)
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s %s is a folder: name the page's file in it, e.g. %s", flag, shown, Printable(filepath.Join(path, "page.html")))
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%s %s is %s, not a file: name a file for the page", flag, shown, kind(fi.Mode()))
	case err == nil:
		f, err := openPage(path, 0)
		if err != nil {
			return fmt.Errorf("%s %s cannot be written (%v): name a file you can write, or make it writable", flag, shown, unwrapPath(err))
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s %s: %v", flag, shown, unwrapPath(err))
	}
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		to, _ := os.Readlink(path)
		return fmt.Errorf("%s %s is a symbolic link to %s, which does not exist: name a file, or create the link's target", flag, shown, Printable(to))
	}
	dir := filepath.Dir(path)
	fi, err = os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: the folder %s does not exist: create it, or name a file in a folder that does", flag, shown, Printable(dir))
	case err == nil && !fi.IsDir():
		return fmt.Errorf("%s %s: %s is not a folder", flag, shown, Printable(dir))
	case err != nil:
		return fmt.Errorf("%s %s: %v", flag, shown, unwrapPath(err))
	}
	f, err := openPage(path, os.O_CREATE|os.O_EXCL)
	if err != nil {
		return fmt.Errorf("%s %s: cannot write in the folder %s (%v): name a file in a folder you can write", flag, shown, Printable(dir), unwrapPath(err))
	}
	f.Close()
	return os.Remove(path)
}

// SavePage writes a page to path, opened as CheckPageOf opened it: write
// renders it into memory first, so that a page that fails to render
// leaves the file as it was.
func SavePage(path string, write func(io.Writer) error) error {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return err
	}
	f, err := openPage(path, os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	if _, err := b.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// openPage opens path to write, with flag's extra flags, without blocking
// (O_NONBLOCK: a named pipe with no reader fails at once instead of
// waiting for one), and refuses what is not a regular file before
// anything is written to it.
func openPage(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK|flag, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is %s, not a file", Printable(path), kind(fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// kind names a file that is not a regular one.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// WriteHistoryPage writes the -history page at path: a window of each of
// sections (history.WritePage), checked within history.PageLimits or
// until ctx ends. A page that could not be written fails r (exit 1). A
// signal while it was checked is said in one line on stderr and makes r
// exit 130; the windows it left unchecked are drawn as unknown.
func WriteHistoryPage(ctx context.Context, r *Report, stderr io.Writer, path string, sections []history.Section) {
	before := ctx.Err()
	err := SavePage(path, func(w io.Writer) error { return history.WritePage(ctx, w, sections, history.PageLimits) })
	if err != nil {
		r.Fail(stderr, fmt.Errorf("-history: %w", err))
	}
	if before == nil && ctx.Err() != nil {
		fmt.Fprintf(stderr, "%s: interrupted by %s while checking the -history page: it draws the windows left unchecked as unknown\n", r.step, Why(ctx))
		r.Interrupt()
	}
}
