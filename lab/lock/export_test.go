package lock

// TokenOf is what the key holds while l holds the lock, for the tests that
// check whose the key is.
func TokenOf(l *Lock) string { return *l.hold.token }
