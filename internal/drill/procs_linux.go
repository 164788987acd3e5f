package drill

import "syscall"

// dieWithParent asks the kernel to kill the child when the drill dies,
// even by SIGKILL, so that no spender or redis-server outlives it.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
