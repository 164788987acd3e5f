package fencing

import (
	"fmt"
	"time"

	"example.com/walletlock/lab/wallet/history"
)

// Story is what happened to step 5's two holders of one lease, A and B,
// in phases 1, 1b and 2, as -json prints it.
type Story struct {
	FenceA    int64   `json:"fence_a"` // 0 without fencing
	FenceB    int64   `json:"fence_b"`
	ReadA     int64   `json:"read_a"`
	ReadB     int64   `json:"read_b"`
	AAccepted bool    `json:"a_write_accepted"`
	BAccepted bool    `json:"b_write_accepted"`
	Highest   int64   `json:"highest_fence"` // the row's fence once both wrote
	PausedMS  float64 `json:"a_paused_ms"`   // A's pause, from its read until it woke; its lease expired meanwhile
	Stale     string  `json:"stale_writer"`  // whose write came from an overtaken read
	AErr      error   `json:"-"`             // why A's write was refused, if it was
}

// Accepted is how many of the two writes landed: B's, and A's if accepted.
func (s Story) Accepted() int { return map[bool]int{true: 2, false: 1}[s.AAccepted] }

// Record adds A's and B's spends of amount from wallet id to the phase's
// history h, each from call, before both, to now: the history then asks
// whether any order of the two explains what each read and whether its
// write landed.
func (s Story) Record(h *history.Recorder, id, call, amount int64) {
	end, a := history.Now(), history.Accepted
	if !s.AAccepted {
		a = history.Outcome(false, s.AErr)
	}
	h.Add(history.Op{Wallet: id, Client: 0, Call: call, Return: end, Amount: amount, Read: s.ReadA, Result: a})
	h.Add(history.Op{Wallet: id, Client: 1, Call: call, Return: end, Amount: amount, Read: s.ReadB, Result: history.Accepted})
}

// Lines tell the story as it happened, one line per move; ttl is the
// lease's, amount each holder's spend.
func (s Story) Lines(phase string, ttl time.Duration, amount int64) []string {
	a, b := s.ReadA-amount, s.ReadB-amount // what A and B write
	paused := time.Duration(s.PausedMS * float64(time.Millisecond)).Round(time.Millisecond)
	switch phase {
	case "1":
		return []string{
			fmt.Sprintf("A: takes the lease, reads %d, pauses", s.ReadA),
			fmt.Sprintf("B: takes the lease once A's has expired (A paused %v, TTL %v), reads %d, writes %d", paused, ttl, s.ReadB, b),
			fmt.Sprintf("A: wakes, writes %d: accepted, and stale: A read %d before B's spend, so B's spend is lost", a, s.ReadA),
		}
	case "1b":
		return []string{
			fmt.Sprintf("A: takes the lease with fence %d, reads %d without claiming the row, pauses", s.FenceA, s.ReadA),
			fmt.Sprintf("B: takes the lease with fence %d once A's has expired (A paused %v), reads %d without claiming the row", s.FenceB, paused, s.ReadB),
			fmt.Sprintf("A: wakes, writes %d with fence %d: accepted, the row's fence was 0", a, s.FenceA),
			fmt.Sprintf("B: writes %d with fence %d: accepted, the row's fence was %d; B read %d before A's spend, so A's spend is lost", b, s.FenceB, s.FenceA, s.ReadB),
		}
	}
	said := fmt.Sprintf("refused, the row carries fence %d (B's): A's was the stale write", s.Highest)
	if s.AAccepted {
		said = "accepted, and stale: A read before B's spend"
	}
	return []string{
		fmt.Sprintf("A: takes the lease with fence %d, claims the row, reads %d, pauses", s.FenceA, s.ReadA),
		fmt.Sprintf("B: takes the lease with fence %d once A's has expired (A paused %v), claims the row, reads %d, writes %d", s.FenceB, paused, s.ReadB, b),
		fmt.Sprintf("A: wakes, writes %d with fence %d: %s", a, s.FenceA, said),
	}
}
