package lock

// SupportsDelex lets the tests ask what Release asks before it picks DELEX.
var SupportsDelex = supportsDelex
