package k8s

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBinary is a stand-in for agentruntime: it logs its version and
// arguments, and stops on SIGTERM like the real one (logging that too).
func fakeBinary(t *testing.T, path, logFile, version string) {
	t.Helper()
	script := fmt.Sprintf(`#!/bin/sh
log=%q
trap 'echo "%s stopped" >> "$log"; exit 0' TERM
echo "%s $*" >> "$log"
sleep 600 &
wait $!
`, logFile, version, version)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
}

// The live-update supervisor of the dev image restarts the binary with the
// synced one on request, keeps the arguments, stops gracefully on SIGTERM
// and passes a crash on as its exit status.
func TestDevEntrypoint(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatal("sh is needed to run tilt/dev-entrypoint.sh")
	}
	script, err := filepath.Abs(filepath.Join(tiltDir, "dev-entrypoint.sh"))
	require.NoError(t, err)

	t.Run("restart on request", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		logFile := filepath.Join(dir, "log")
		fakeBinary(t, filepath.Join(dir, "image", "agentruntime"), logFile, "v1")
		cmd := exec.Command("sh", script, "serve", "control")
		cmd.Env = append(os.Environ(),
			"DEV_IMAGE_BINARY="+filepath.Join(dir, "image", "agentruntime"),
			"DEV_APP_DIR="+filepath.Join(dir, "app"),
			"DEV_RESTART_TRIGGER="+filepath.Join(dir, "restart"),
		)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		logged := func(line string) func() bool {
			return func() bool {
				data, _ := os.ReadFile(logFile)
				return strings.Contains(string(data), line+"\n")
			}
		}
		require.Eventually(t, logged("v1 serve control"), 10*time.Second, 10*time.Millisecond)

		// What live update does: sync the new binary, then ask.
		fakeBinary(t, filepath.Join(dir, "app", "sync", "agentruntime"), logFile, "v2")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "restart"), nil, 0o644))
		require.Eventually(t, logged("v2 serve control"), 10*time.Second, 10*time.Millisecond)
		require.Eventually(t, logged("v1 stopped"), 10*time.Second, 10*time.Millisecond)

		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, cmd.Wait(), "a graceful stop exits 0")
		assert.True(t, logged("v2 stopped")())
	})

	t.Run("crash is the container's exit", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		binary := filepath.Join(dir, "image", "agentruntime")
		require.NoError(t, os.MkdirAll(filepath.Dir(binary), 0o755))
		require.NoError(t, os.WriteFile(binary, []byte("#!/bin/sh\nexit 3\n"), 0o755))
		cmd := exec.Command("sh", script, "serve", "tasks")
		cmd.Env = append(os.Environ(), "DEV_IMAGE_BINARY="+binary, "DEV_APP_DIR="+filepath.Join(dir, "app"), "DEV_RESTART_TRIGGER="+filepath.Join(dir, "restart"))
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 3, exit.ExitCode())
	})
}

// The supervisor's default paths are the ones the Tiltfile syncs to and
// touches, and /app is the volume the dev overlay mounts.
func TestDevEntrypointMatchesTiltfile(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile(filepath.Join(tiltDir, "dev-entrypoint.sh"))
	require.NoError(t, err)
	defaults := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+)=\$\{\w+:-([^}]+)\}$`).FindAllStringSubmatch(string(script), -1) {
		defaults[m[1]] = m[2]
	}
	require.Contains(t, defaults, "app")
	require.Contains(t, defaults, "trigger")

	dev, err := rendered("dev")
	require.NoError(t, err)
	tf, err := evalTiltfile(t, "kind-agentruntime", dev, nil)
	require.NoError(t, err)
	require.Len(t, tf.images, 1)
	img := tf.images[0]
	require.Len(t, img.syncs, 1)
	assert.Equal(t, defaults["app"]+"/sync/agentruntime", img.syncs[0].remote)
	require.NotEmpty(t, img.runs)
	assert.Equal(t, "touch "+defaults["trigger"], img.runs[0].cmd)
}
