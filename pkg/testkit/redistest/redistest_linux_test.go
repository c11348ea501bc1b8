package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

const helperEnv = "REDISTEST_HELPER_PROCESS"

// TestHelperProcess is not a test: run as a child by
// TestSharedServerDiesWithTestBinary, it starts the shared server, reports
// its pid and exits abruptly, skipping every cleanup.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	t.Setenv(EnvURL, "")
	URL(t)
	fmt.Printf("pid %d\n", shared.cmd.Process.Pid)
	os.Exit(0)
}

func TestSharedServerDiesWithTestBinary(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.Output()
	require.NoError(t, err, "helper output: %s", out)

	var pid int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, err = strconv.Atoi(rest)
			require.NoError(t, err)
		}
	}
	require.NotZero(t, pid, "helper output: %s", out)

	require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 10*time.Millisecond,
		"redis-server %d outlived the test binary that started it", pid)
}

// alive reports whether pid runs; a zombie awaiting a reaper that never
// comes (PID 1 in some containers) counts as dead.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// A killed and restarted append-only server keeps what it acknowledged.
func TestProcessKillRestartKeepsAppendOnlyData(t *testing.T) {
	s := Start(t, Options{AppendOnly: true})
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(s.Port)})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered by a killed server")
	}
	s.Restart(t)
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("after kill -9 and restart: %q, %v", v, err)
	}
}
