package launch

import "syscall"

// dieWithParent asks the kernel to kill the child when its parent dies,
// even by SIGKILL, so that no spender or server outlives the program.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
