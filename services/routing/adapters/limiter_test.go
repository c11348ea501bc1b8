package adapters_test

import (
	"testing"

	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
	"github.com/agentruntime/agentruntime/services/routing/adapters"
	"github.com/agentruntime/agentruntime/services/routing/adapters/limitertest"
)

func TestMemory(t *testing.T) {
	limitertest.Run(t, func(*testing.T) limitertest.Store { return adapters.NewMemory() })
}

func TestRedis(t *testing.T) {
	client := redistest.Client(t)
	limitertest.Run(t, func(*testing.T) limitertest.Store { return adapters.NewRedis(client) })
}
