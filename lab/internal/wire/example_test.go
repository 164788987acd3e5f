package wire_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/wire"
)

// A holder stopped between the two commands of a Release written as GET,
// compare, DEL: the GET's reply reaches it, the DEL waits at the proxy
// until Resume. Meanwhile the judge can let the lease expire and hand the
// lock to another holder.
func Example_pauseAfter() {
	p, err := wire.Listen("127.0.0.1:0", "127.0.0.1:6379")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	p.Arm(wire.PauseAfter, 1)
	go func() {
		if rdb.Get(ctx, "lock:1").Val() == "my-token" {
			rdb.Del(ctx, "lock:1")
		}
	}()
	select {
	case held := <-p.Struck():
		fmt.Println("held:", held) // held: DEL lock:1
		// ... the lease expires; another holder takes the lock ...
		p.Resume()
	case <-ctx.Done():
		fmt.Println("the holder sent no command after the GET: it did not hold the lock")
	}
}
