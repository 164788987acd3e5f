// The judge: it runs a lock through the article's properties, chapter by
// chapter, on a redis-server of its own and the real PostgreSQL, with real
// holder processes that it kills (SIGKILL) and pauses (SIGSTOP), and says
// in plain words what broke.
//
//	go run ./cmd/judge                       # the root's lock, the article's
//	go run ./cmd/judge -step 2 -seed 7       # step 2's properties, seed 7's schedule
//	make judge LOCK=./mylock                 # a package with the root lock's API
//	make judge LOCK=mutant:del-no-token      # one of the mutants
package main

import (
	"example.com/walletlock/lab/judge"
	"example.com/walletlock/lab/judge/locks"
)

func main() { judge.Main(locks.All()...) }
