package projection_test

import (
	"testing"

	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projection/projectiontest"
)

func TestMemory(t *testing.T) {
	projectiontest.Run(t, func(t *testing.T) projection.Store {
		return projection.NewMemory()
	})
}

// The contract on the projector's batched write path (overlay fold,
// conditional write).
func TestMemoryBatched(t *testing.T) {
	projectiontest.Run(t, func(t *testing.T) projection.Store {
		return projectiontest.Batched(projection.NewMemory())
	})
}
