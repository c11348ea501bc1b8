package redistest

import (
	"os/exec"
	"syscall"
)

// shareServer is true where the kernel can kill the server when the test
// binary dies, so one server may outlive any single test.
const shareServer = true

func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
