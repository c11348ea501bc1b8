package main

import (
	"os/exec"
	"strings"
	"testing"
)

// A flag value JetStream (or the listener) would refuse once the server is
// starting is a flag error naming the flag and the bound, not the raw
// error; the bound itself is accepted.
func TestFlagsJetStreamWouldRefuseAreFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--log-max-age", "1m"}, "--log-max-age 1m0s: the event log keeps events at least 10m0s"},
		{[]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--log-max-age", "-1s"}, "--log-max-age -1s"},
		{[]string{"serve", "control", "--replicas", "6"}, "--replicas 6: JetStream keeps 1 to 5 replicas"},
		{[]string{"serve", "control", "--replicas", "0"}, "--replicas 0"},
		{[]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--metrics-listen", "bad"}, `--metrics-listen "bad"`},
		{[]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--max-streams-per-tenant", "-1"}, "--max-streams-per-tenant -1: a bound of 0 or more"},
		{[]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--max-parked-turns-per-tenant", "-1"}, "--max-parked-turns-per-tenant -1: a bound of 0 or more"},
		{[]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--log-max-bytes", "1MiB", "--log-tenant-max-bytes", "2MiB"}, "--log-tenant-max-bytes 2097152: a tenant's share cannot exceed --log-max-bytes 1048576"},
		{[]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--append-events-per-second", "-1"}, "--append-events-per-second -1: a rate of 0 or more"},
		{[]string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--append-bytes-per-second", "lots"}, `invalid value "lots" for flag -append-bytes-per-second`},
	}
	for _, c := range cases {
		out, err := exec.Command(binary, c.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "err_code") {
			t.Errorf("agentruntime %v: err=%v, want a flag error saying %q; output:\n%s", c.args, err, c.want, out)
		}
	}
	start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker", "--log-max-age", "10m")
}
