//go:build !linux

package redistest

import "os/exec"

// shareServer is false where nothing would stop a shared server when the test
// binary exits: each test starts its own and stops it in t.Cleanup.
const shareServer = false

func dieWithParent(*exec.Cmd) {}
