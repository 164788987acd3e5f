package lock

import "context"

// HasDelex reports whether the server behind rdb has DELEX (Redis 8.4 and
// later), the command Release then uses. It is the lock's own probe and
// its answer: asked of the server once per client, remembered after that
// (a lost reply is not remembered: Release then uses the script, which
// every server has). A program that says how its locks are released (step
// 2) asks here, so that it reports what Release decided. A nil rdb returns
// an error matching ErrInvalid.
func HasDelex(ctx context.Context, rdb Client) (bool, error) { return supportsDelex(ctx, rdb) }
