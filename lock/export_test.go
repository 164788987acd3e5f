package lock

// SupportsDelex lets the tests ask what Release asks before it picks DELEX.
var SupportsDelex = supportsDelex

// TokenOf is what the key holds while l holds the lock, for the tests that
// check whose the key is.
func TokenOf(l *Lock) string { return *l.hold.token }
