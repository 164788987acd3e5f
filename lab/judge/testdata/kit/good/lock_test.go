package good

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/judge"
)

func TestJudge(t *testing.T) {
	judge.Test(t, judge.Article[*Lock, *redis.Client]{
		Name: "good", Acquire: Acquire, Release: (*Lock).Release,
		NotHeld: ErrNotHeld,
	}.Adapter(), judge.Options{Chapters: []string{"lease"}, Only: []string{"release-own"}, Seed: 1})
}
