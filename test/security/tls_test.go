package security

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
	"github.com/agentruntime/agentruntime/pkg/testkit/testcert"
)

// Credentials never cross the network in clear (docs/security.md, "TLS").

// httpsPost is a Connect JSON call over https with the client's TLS; key,
// when set, is sent as a bearer token.
func httpsPost(t *testing.T, client *http.Client, url, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// `dev --auth --tls-cert --tls-key` serves native gRPC and Connect over
// TLS to a client that trusts the CA, nothing to a client in clear; the
// CLI with --tls-ca submits a turn with its API key, and a worker process
// with its key and the CA runs it.
func TestTLSWithAuth(t *testing.T) {
	certs := testcert.New(t)
	dev := binproc.Start(t, bin, nil, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--console=false",
		"--auth", authFile(t), "--tls-cert", certs.CertFile, "--tls-key", certs.KeyFile, "--health-listen", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	conn, err := grpc.NewClient(dev.Addr, grpc.WithTransportCredentials(credentials.NewTLS(certs.Client())))
	require.NoError(t, err)
	defer conn.Close()
	health, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, health.GetStatus())

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: certs.Client(), ForceAttemptHTTP2: true}}
	code, body := httpsPost(t, client, "https://"+dev.Addr+"/agentruntime.control.v1.ControlService/ListSessions", acmeOperator, `{}`)
	assert.Equal(t, http.StatusOK, code, body)
	code, body = httpsPost(t, client, "https://"+dev.Addr+"/agentruntime.control.v1.ControlService/ListSessions", "", `{}`)
	assert.Equal(t, http.StatusUnauthorized, code, "no key: %s", body)

	// In clear: the native client's connection fails, the HTTP call gets
	// no answer from a handler.
	plain, err := grpc.NewClient(dev.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer plain.Close()
	_, err = healthpb.NewHealthClient(plain).Check(ctx, &healthpb.HealthCheckRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	req, err := http.NewRequest(http.MethodPost, "http://"+dev.Addr+"/agentruntime.control.v1.ControlService/ListSessions", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+acmeOperator)
	if resp, err := (&http.Client{}).Do(req); err == nil {
		_ = resp.Body.Close()
		assert.NotEqual(t, http.StatusOK, resp.StatusCode, "a call in clear was answered")
	}

	// Health alone is served in clear on --health-listen (for probes that
	// speak no TLS); the API is not.
	m := regexp.MustCompile(`msg="health alone, in clear" listen=(\S+)`).FindStringSubmatch(dev.Output())
	require.NotNil(t, m, "no health address in the output")
	probe, err := grpc.NewClient(m[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer probe.Close()
	health, err = healthpb.NewHealthClient(probe).Check(ctx, &healthpb.HealthCheckRequest{Service: "agentruntime.control.v1.ControlService"})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, health.GetStatus())
	_, err = controlv1.NewControlServiceClient(probe).ListSessions(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+acmeOperator), &controlv1.ListSessionsRequest{})
	assert.Equal(t, codes.Unimplemented, status.Code(err), "the API in clear on the health port: %v", err)

	// The CLI: in clear it fails, with --tls alone (the system roots,
	// which do not hold the test CA) it fails, with --tls-ca it submits.
	for _, args := range [][]string{nil, {"--tls"}} {
		out, err := exec.Command(bin, append(append([]string{"submit", "--addr", dev.Addr, "--api-key", acmeOperator, "--session", "s-refused"}, args...), "hello")...).CombinedOutput()
		assert.Error(t, err, "submit %v: %s", args, out)
	}
	authed := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+acmeOperator)
	control := controlv1.NewControlServiceClient(conn)
	stream, err := control.SubscribeEvents(authed, &controlv1.SubscribeEventsRequest{SessionId: "s-tls",
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	require.NoError(t, err)
	out := runCLI(t, "submit", "--addr", dev.Addr, "--api-key", acmeOperator, "--tls-ca", certs.CAFile, "--session", "s-tls", "hello over TLS")
	assert.Contains(t, out, "in session s-tls")
	sessions, err := control.ListSessions(authed, &controlv1.ListSessionsRequest{})
	require.NoError(t, err)
	var ids []string
	for _, s := range sessions.GetSessions() {
		ids = append(ids, s.GetSessionId())
	}
	assert.Equal(t, []string{"s-tls"}, ids, "only the submit over TLS made a session")

	// A worker process with its key and --tls-ca (AR_TLS_CA) runs the
	// turn; the CLI approves its write; the file is written.
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\n"), 0o644))
	worker := exec.Command(bin, "worker", "--addr", dev.Addr, "--api-key", acmeWorker, "--workspace", ws)
	worker.Env = append(os.Environ(), "AR_TLS_CA="+certs.CAFile)
	var workerOut binproc.Buffer
	worker.Stdout, worker.Stderr = writerOf(&workerOut), writerOf(&workerOut)
	require.NoError(t, worker.Start())
	t.Cleanup(func() {
		_ = worker.Process.Kill()
		_ = worker.Wait()
		if t.Failed() {
			t.Logf("worker output:\n%s", workerOut.String())
		}
	})
	until := func(typ string) {
		t.Helper()
		for {
			m, err := stream.Recv()
			require.NoError(t, err, "waiting for %s", typ)
			if ev := m.GetEvent(); ev != nil {
				require.NotEqual(t, "turn.failed", ev.GetType(), "%v", ev)
				if ev.GetType() == typ {
					return
				}
			}
		}
	}
	until("action.required")
	runCLI(t, "approve", "--addr", dev.Addr, "--api-key", acmeOperator, "--tls-ca", certs.CAFile, "--session", "s-tls")
	until("turn.completed")
	notes, err := os.ReadFile(filepath.Join(ws, "NOTES.md"))
	require.NoError(t, err)
	assert.Contains(t, string(notes), "# Notes")
}

// writerOf adapts a binproc.Buffer to io.Writer.
func writerOf(b *binproc.Buffer) io.Writer {
	return writerFunc(func(p []byte) (int, error) { b.WriteString(string(p)); return len(p), nil })
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// `dev --tls-cert --tls-key` without --auth: the in-process worker dials
// its own port over TLS, and a turn the CLI submits with --tls-ca and
// approves with --tls-ca runs to its end (the file it writes is there).
func TestTLSDevWorkerRunsATurn(t *testing.T) {
	certs := testcert.New(t)
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\n"), 0o644))
	dev := startDev(t, ws, "--tls-cert", certs.CertFile, "--tls-key", certs.KeyFile, "--console=true")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// The console over https, from its own https origin.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certs.Pool()}}}
	resp, err := client.Get("https://" + dev.Addr + "/")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	conn, err := grpc.NewClient(dev.Addr, grpc.WithTransportCredentials(credentials.NewTLS(certs.Client())))
	require.NoError(t, err)
	defer conn.Close()
	control := controlv1.NewControlServiceClient(conn)
	stream, err := control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s-tls",
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	require.NoError(t, err)
	until := func(typ string) {
		t.Helper()
		for {
			m, err := stream.Recv()
			require.NoError(t, err, "waiting for %s", typ)
			if ev := m.GetEvent(); ev != nil {
				require.NotEqual(t, "turn.failed", ev.GetType(), "%v", ev)
				if ev.GetType() == typ {
					return
				}
			}
		}
	}

	runCLI(t, "submit", "--addr", dev.Addr, "--tls-ca", certs.CAFile, "--session", "s-tls", "take notes")
	until("action.required")
	runCLI(t, "approve", "--addr", dev.Addr, "--tls-ca", certs.CAFile, "--session", "s-tls")
	until("turn.completed")
	notes, err := os.ReadFile(filepath.Join(ws, "NOTES.md"))
	require.NoError(t, err)
	assert.Contains(t, string(notes), "# Notes")
}

// serve with credentials (it always has them), without TLS, on an address
// other machines reach: refused before it connects to anything, naming
// the flags that would make it start.
func TestServeRefusesCredentialsInClearOffLoopback(t *testing.T) {
	auth := authFile(t)
	base := []string{"serve", "control", "--nats", "nats://127.0.0.1:1", "--redis", "redis://127.0.0.1:1/0", "--auth", auth}
	for _, listen := range []string{"0.0.0.0:0", ":0"} {
		out, err := exec.Command(bin, append(base, "--listen", listen)...).CombinedOutput()
		require.Error(t, err, "%s", out)
		assert.Contains(t, string(out), "--tls-cert", listen)
		assert.Contains(t, string(out), "--insecure-plaintext", listen)
		assert.NotContains(t, string(out), "NATS", "refused before connecting: %s", out)
	}
	// Loopback, TLS, or --insecure-plaintext pass the check: serve goes on
	// to connect to NATS (and fails there, there is none).
	certs := testcert.New(t)
	for _, extra := range [][]string{
		{"--listen", "127.0.0.1:0"},
		{"--listen", "0.0.0.0:0", "--tls-cert", certs.CertFile, "--tls-key", certs.KeyFile},
		{"--listen", "0.0.0.0:0", "--insecure-plaintext"},
	} {
		out, err := exec.Command(bin, append(base, extra...)...).CombinedOutput()
		require.Error(t, err, "%s", out)
		assert.Contains(t, string(out), "connect NATS", "%v: %s", extra, out)
		assert.NotContains(t, string(out), "refusing", "%v", extra)
	}
}
