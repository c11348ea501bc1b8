package projection_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

func TestCheckRedisAcceptsTheTestServer(t *testing.T) {
	if err := projection.CheckRedis(context.Background(), redistest.Client(t)); err != nil {
		t.Fatal(err)
	}
}

func TestOlderRedisIsRefusedWithBothVersions(t *testing.T) {
	for v, old := range map[string]bool{"6.0.16": true, "5.0.7": true, "6.2.0": false, "7.0.15": false, "10.0.0": false} {
		err := projection.CheckRedisVersion(v)
		if old != (err != nil) {
			t.Errorf("Redis %s: %v", v, err)
			continue
		}
		if old && (!errors.Is(err, projection.ErrUnfitRedis) || !strings.Contains(err.Error(), v) || !strings.Contains(err.Error(), "need 6.2.0 or later")) {
			t.Errorf("Redis %s: %v does not name both versions", v, err)
		}
	}
}
