package lock

import "context"

// HasDelex reports whether the server behind rdb has DELEX (Redis 8.4 and
// later), the command Release then uses: the lock's own probe, asked once
// per client and remembered (a lost reply is not: Release then uses the
// script, which every server has). A nil rdb returns an error matching
// ErrInvalid.
func HasDelex(ctx context.Context, rdb Client) (bool, error) { return supportsDelex(ctx, rdb) }
