//go:build unix

package netns

import (
	"os"
	"testing"
)

// One id, one holder: a second claim of a held id gets nothing, and a
// claim let go leaves no file.
func TestClaimNet_oneHolderAtATime(t *testing.T) {
	if err := CanPartition(); err != nil {
		t.Skip(err)
	}
	const id = maxNets // runs take the lowest free id: this one is seldom in use
	first, err := claimNet(id)
	if err != nil {
		t.Fatal(err)
	}
	if first == nil {
		t.Skipf("network %d is a live run's", id)
	}
	second, err := claimNet(id)
	if err != nil || second != nil {
		t.Errorf("a second claim of a held id = %v, %v; want nothing", second, err)
	}
	releaseClaim(first)
	if _, err := os.Stat(claimPath(id)); !os.IsNotExist(err) {
		t.Errorf("the claim let go is still there: %v", err)
	}
	again, err := claimNet(id)
	if err != nil || again == nil {
		t.Fatalf("the id let go cannot be claimed again: %v", err)
	}
	releaseClaim(again)
}
