package worker_test

import (
	"os"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/worker/confine"
)

// The test binary runs workers, so it is their sandbox helper too
// (pkg/worker/confine): a confined shell command re-executes it.
func TestMain(m *testing.M) {
	confine.Main()
	os.Exit(m.Run())
}
