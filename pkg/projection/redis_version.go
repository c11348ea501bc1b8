package projection

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// MinRedisVersion is the oldest Redis the Redis store works with: ZRANGE
// with BYSCORE, REV and LIMIT (Range) came in 6.2.
const MinRedisVersion = "6.2.0"

// ErrUnfitRedis reports a Redis server the store cannot work with.
var ErrUnfitRedis = errors.New("projection: unfit Redis server")

// CheckRedis fails with ErrUnfitRedis, naming the version found and the
// version needed, when the server is older than MinRedisVersion. A
// process calls it at start rather than fail on its first range read.
func CheckRedis(ctx context.Context, client redis.UniversalClient) error {
	info, err := client.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("projection: Redis INFO server: %w", err)
	}
	found := ""
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "redis_version:"); ok {
			found = v
			break
		}
	}
	if found == "" {
		return fmt.Errorf("%w: INFO server names no redis_version; need Redis %s or later", ErrUnfitRedis, MinRedisVersion)
	}
	return CheckRedisVersion(found)
}

// CheckRedisVersion is CheckRedis's rule on a version string.
func CheckRedisVersion(found string) error {
	if olderThan(found, MinRedisVersion) {
		return fmt.Errorf("%w: Redis %s is too old: need %s or later (ZRANGE BYSCORE REV LIMIT for read-model ranges)", ErrUnfitRedis, found, MinRedisVersion)
	}
	return nil
}

func olderThan(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range 3 {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}
