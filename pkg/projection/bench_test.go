package projection_test

import (
	"testing"

	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projection/projectiontest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

func BenchmarkApply(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		s := projection.NewMemory()
		defer s.Close()
		projectiontest.BenchmarkApply(b, s)
	})
	b.Run("redis", func(b *testing.B) {
		s := newRedis(b, redistest.Client(b))
		defer s.Close()
		projectiontest.BenchmarkApply(b, s)
	})
}
