package config_test

import (
	"bytes"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/pkg/config"
)

type flags struct {
	fs       *flag.FlagSet
	dataDir  *string
	listen   *string
	replicas *int
	verbose  *bool
	timeout  *time.Duration
}

func newFlags() flags {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	return flags{
		fs:       fs,
		dataDir:  fs.String("data-dir", "./data", "where state lives"),
		listen:   fs.String("listen", "127.0.0.1:7070", "gRPC listen address"),
		replicas: fs.Int("nats-replicas", 1, "JetStream replicas"),
		verbose:  fs.Bool("verbose", false, "log at debug level"),
		timeout:  fs.Duration("shutdown-timeout", 10*time.Second, "graceful stop bound"),
	}
}

func TestEnvName(t *testing.T) {
	assert.Equal(t, "AR_DATA_DIR", config.EnvName("data-dir"))
	assert.Equal(t, "AR_LISTEN", config.EnvName("listen"))
	assert.Equal(t, "AR_OTEL_OTLP_ENDPOINT", config.EnvName("otel.otlp-endpoint"))
}

func TestPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		dataDir string
		listen  string
		repl    int
		verbose bool
		timeout time.Duration
	}{
		{name: "built-in defaults", dataDir: "./data", listen: "127.0.0.1:7070", repl: 1, timeout: 10 * time.Second},
		{
			name:    "env sets defaults",
			env:     map[string]string{"AR_DATA_DIR": "/var/lib/ar", "AR_NATS_REPLICAS": "3", "AR_VERBOSE": "true", "AR_SHUTDOWN_TIMEOUT": "30s"},
			dataDir: "/var/lib/ar", listen: "127.0.0.1:7070", repl: 3, verbose: true, timeout: 30 * time.Second,
		},
		{
			name:    "explicit flags win over env",
			env:     map[string]string{"AR_DATA_DIR": "/var/lib/ar", "AR_NATS_REPLICAS": "3", "AR_VERBOSE": "true"},
			args:    []string{"--data-dir", "/tmp/x", "-nats-replicas=5", "-verbose=false"},
			dataDir: "/tmp/x", listen: "127.0.0.1:7070", repl: 5, verbose: false, timeout: 10 * time.Second,
		},
		{
			name:    "empty env counts as unset",
			env:     map[string]string{"AR_NATS_REPLICAS": "", "AR_LISTEN": ""},
			dataDir: "./data", listen: "127.0.0.1:7070", repl: 1, timeout: 10 * time.Second,
		},
		{
			name:    "unrelated AR_ variables are ignored",
			env:     map[string]string{"AR_SOMETHING_ELSE": "x"},
			dataDir: "./data", listen: "127.0.0.1:7070", repl: 1, timeout: 10 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			f := newFlags()
			require.NoError(t, config.Parse(f.fs, tt.args))
			assert.Equal(t, tt.dataDir, *f.dataDir)
			assert.Equal(t, tt.listen, *f.listen)
			assert.Equal(t, tt.repl, *f.replicas)
			assert.Equal(t, tt.verbose, *f.verbose)
			assert.Equal(t, tt.timeout, *f.timeout)
		})
	}
}

func TestInvalidEnvNamesTheVariable(t *testing.T) {
	t.Setenv("AR_NATS_REPLICAS", "three")
	t.Setenv("AR_SHUTDOWN_TIMEOUT", "soon")
	f := newFlags()
	err := config.EnvDefault(f.fs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AR_NATS_REPLICAS")
	assert.Contains(t, err.Error(), "-nats-replicas")
	assert.Contains(t, err.Error(), "AR_SHUTDOWN_TIMEOUT", "every bad variable is reported, not only the first")
	// Parse must not go ahead with half-applied configuration.
	require.Error(t, config.Parse(newFlags().fs, nil))
}

func TestUsageMentionsEnv(t *testing.T) {
	f := newFlags()
	require.NoError(t, config.EnvDefault(f.fs))
	require.NoError(t, config.EnvDefault(f.fs)) // idempotent
	assert.Equal(t, "where state lives (env AR_DATA_DIR)", f.fs.Lookup("data-dir").Usage)
}
