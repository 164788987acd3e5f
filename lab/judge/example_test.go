package judge_test

import (
	"fmt"
	"testing"

	"example.com/walletlock/lab/judge"
	"example.com/walletlock/lock"
)

// A package with the article's API is judged through Article: set the
// functions it has, and what it lacks is "not claimed".
func ExampleArticle() {
	a := judge.Article[*lock.Lock, lock.Client]{
		Name:    "mine",
		Acquire: lock.Acquire,
		Release: (*lock.Lock).Release,
		Refresh: (*lock.Lock).Refresh,
		NotHeld: lock.ErrNotHeld,
	}.Adapter()
	fmt.Println(a.Name, a.New != nil)
	// Output: mine true
}

// In a lock's own repository, one test judges it: go test runs every
// property of the lease chapter as a subtest, on a redis-server of the
// judge's own.
func ExampleTest() {
	adapter := judge.Article[*lock.Lock, lock.Client]{Name: "mine", Acquire: lock.Acquire, Release: (*lock.Lock).Release}.Adapter()
	testJudge := func(t *testing.T) {
		judge.Test(t, adapter, judge.Options{Chapters: []string{"lease"}})
	}
	_ = testJudge // func TestJudge(t *testing.T) in a _test.go file
}

// A lock in another language is a holder program that speaks the holder
// protocol on its stdin and stdout (docs/judge.md).
func ExampleAdapter() {
	python := judge.Adapter{Name: "redis-py", Command: []string{"/usr/bin/python3", "holder.py"}}
	fmt.Println(python.Name, python.Command[1])
	// Output: redis-py holder.py
}

// A judging program of its own: Main reads -lock, -chapter, -only,
// -seed, -json and -html, and runs the holder processes too.
func ExampleMain() {
	mine := judge.Article[*lock.Lock, lock.Client]{Name: "mine", Acquire: lock.Acquire, Release: (*lock.Lock).Release}.Adapter()
	main := func() { judge.Main(mine) }
	_ = main // func main() { judge.Main(mine) }
}
