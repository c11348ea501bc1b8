package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/mcpservers"
	"github.com/agentruntime/agentruntime/pkg/worker/mcp"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// wrapped runs a real server under sh so the test can watch and steer it:
// the shell writes its pid (the server's process group) to dir/pid, copies
// what the worker sends to dir/requests, and refuses to start while
// dir/block exists.
func wrapped(dir, bin string, args ...string) mcp.ServerConfig {
	line := fmt.Sprintf(`if [ -e %q ]; then echo blocked by the test >&2; exit 3; fi; echo $$ > %q; tee -a %q | exec %q`,
		filepath.Join(dir, "block"), filepath.Join(dir, "pid"), filepath.Join(dir, "requests"), bin)
	for _, a := range args {
		line += fmt.Sprintf(" %q", a)
	}
	return mcp.ServerConfig{Type: mcp.TypeStdio, Command: "/bin/sh", Args: []string{"-c", line}}
}

func tool(t *testing.T, m *mcp.Manager, name string) tools.Tool {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Spec().Name == name {
			return tl
		}
	}
	var names []string
	for _, tl := range m.Tools() {
		names = append(names, tl.Spec().Name)
	}
	t.Fatalf("no tool %s among %v", name, names)
	return nil
}

func call(t *testing.T, tl tools.Tool, args string) (tools.Result, error) {
	t.Helper()
	if _, err := tl.Plan(nil, json.RawMessage(args)); err != nil {
		t.Fatalf("plan %s: %v", args, err)
	}
	return tl.Run(testkit.Context(t), nil, json.RawMessage(args))
}

func category(err error) string {
	var f *tools.Failure
	if errors.As(err, &f) {
		return f.Category
	}
	return fmt.Sprintf("not a failure: %v", err)
}

// server-everything over stdio: its tools are offered as
// mcp__everything__<tool> with their schemas, echo echoes, the worker's
// environment is not passed on beyond the allowlist and the config's env,
// and the facts say it runs.
func TestEverythingServerOffersItsToolsAndEchoes(t *testing.T) {
	bin := mcpservers.Bin(t, mcpservers.Everything)
	t.Setenv("AR_TEST_WORKER_SECRET", "worker-secret-value")
	cfg := mcp.Config{Servers: map[string]mcp.ServerConfig{"everything": {Command: bin, Args: []string{"stdio"}, Env: map[string]string{"GIVEN": "given-value"}}}}
	m := mcp.Start(context.Background(), cfg, mcp.Options{Dir: t.TempDir()})
	defer m.Close()

	st, _ := m.Status("everything")
	if st.State != mcp.StateRunning || st.PID == 0 {
		t.Fatalf("status %+v, want running with a pid", st)
	}
	echo := tool(t, m, "mcp__everything__echo")
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal([]byte(echo.Spec().Schema), &schema); err != nil || schema.Properties["message"] == nil {
		t.Fatalf("echo's schema %s does not declare message (%v)", echo.Spec().Schema, err)
	}
	if !echo.Spec().ReadOnly || echo.Spec().Destructive {
		t.Errorf("echo's annotations (readOnlyHint) are not in its spec: %+v", echo.Spec())
	}
	tool(t, m, "mcp__everything__get-sum")
	acc, err := echo.Plan(nil, json.RawMessage(`{"message":"hi"}`))
	if err != nil || acc.Access.String() != "ACCESS_EXECUTE" {
		t.Fatalf("plan = %v, %v; every MCP call is declared execute", acc, err)
	}
	if _, err := echo.Plan(nil, json.RawMessage(`["not","an","object"]`)); category(err) != tools.InvalidArguments {
		t.Fatalf("an array as arguments: %v, want invalid_arguments", err)
	}

	res, err := call(t, echo, `{"message":"hello from the worker"}`)
	if err != nil || !strings.Contains(res.Output, "hello from the worker") {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	res, err = call(t, tool(t, m, "mcp__everything__get-env"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Output, "worker-secret-value") || !strings.Contains(res.Output, "given-value") {
		t.Fatalf("the server's environment should hold its config's env and not the worker's other variables:\n%s", res.Output)
	}
	// An argument the server's schema refuses: the server says so.
	if _, err := call(t, tool(t, m, "mcp__everything__get-sum"), `{"a":"one","b":2}`); err == nil {
		t.Fatal("get-sum with a string took it")
	} else if c := category(err); c != mcp.ToolError && c != mcp.ProtocolError {
		t.Fatalf("get-sum with a string: %v, want tool_error or mcp_error", err)
	}
	if f := m.Facts()["mcp_server.everything"]; !strings.HasPrefix(f, "running, ") || !strings.Contains(f, "pid "+strconv.Itoa(st.PID)) {
		t.Fatalf("facts %q", f)
	}
	if len(m.Notices()) != 0 {
		t.Fatalf("notices for a running server: %v", m.Notices())
	}
}

// A server killed during a call: the call fails mcp_server_exited; while
// it cannot start its tools are withdrawn, a call fails
// mcp_server_unavailable and the notices say so; then it comes back under
// a new pid and the next call works.
func TestAServerKilledMidCallIsRestartedAndItsToolsComeBack(t *testing.T) {
	bin := mcpservers.Bin(t, mcpservers.Everything)
	dir := t.TempDir()
	cfg := mcp.Config{Servers: map[string]mcp.ServerConfig{"everything": wrapped(dir, bin, "stdio")}}
	m := mcp.Start(context.Background(), cfg, mcp.Options{Dir: dir, MinBackoff: 50 * time.Millisecond})
	defer m.Close()
	first, _ := m.Status("everything")
	if first.State != mcp.StateRunning {
		t.Fatalf("status %+v", first)
	}
	long := tool(t, m, "mcp__everything__trigger-long-running-operation")
	echo := tool(t, m, "mcp__everything__echo")

	errc := make(chan error, 1)
	go func() {
		_, err := long.Run(context.Background(), nil, json.RawMessage(`{"duration":60,"steps":60}`))
		errc <- err
	}()
	// The call reached the server: then it dies.
	testkit.Eventually(t, "the call reached the server", func() bool {
		raw, _ := os.ReadFile(filepath.Join(dir, "requests"))
		return strings.Contains(string(raw), "trigger-long-running-operation")
	})
	if err := os.WriteFile(filepath.Join(dir, "block"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; category(err) != mcp.ServerExited {
		t.Fatalf("the call under a killed server: %v, want %s", err, mcp.ServerExited)
	}
	testkit.Eventually(t, "the server is restarting, blocked", func() bool {
		st, _ := m.Status("everything")
		return st.State == mcp.StateRestarting && strings.Contains(st.LastError, "blocked by the test")
	})
	if slices.ContainsFunc(m.Tools(), func(tl tools.Tool) bool { return strings.HasPrefix(tl.Spec().Name, "mcp__everything__") }) {
		t.Fatal("a restarting server's tools are still offered")
	}
	if n := m.Notices(); len(n) != 1 || !strings.Contains(n[0], "mcp__everything__*") || !strings.Contains(n[0], "restarting") {
		t.Fatalf("notices %v", n)
	}
	if _, err := call(t, echo, `{"message":"too early"}`); category(err) != mcp.Unavailable {
		t.Fatalf("a call while the server is down: %v, want %s", err, mcp.Unavailable)
	}

	if err := os.Remove(filepath.Join(dir, "block")); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the server runs again", func() bool {
		st, _ := m.Status("everything")
		return st.State == mcp.StateRunning
	})
	st, _ := m.Status("everything")
	if st.PID == first.PID || st.Restarts < 2 {
		t.Fatalf("after the restart: %+v (first pid %d)", st, first.PID)
	}
	res, err := call(t, tool(t, m, "mcp__everything__echo"), `{"message":"back again"}`)
	if err != nil || !strings.Contains(res.Output, "back again") {
		t.Fatalf("echo after the restart = %+v, %v", res, err)
	}
	// The tool value the turn held before the restart reaches the new
	// server too.
	if res, err := call(t, echo, `{"message":"old handle"}`); err != nil || !strings.Contains(res.Output, "old handle") {
		t.Fatalf("echo through the old tool = %+v, %v", res, err)
	}
}

// A call's context bounds it: cancelled, the call ends cancelled at once
// and the server keeps serving.
func TestACancelledCallEndsCancelled(t *testing.T) {
	bin := mcpservers.Bin(t, mcpservers.Everything)
	m := mcp.Start(context.Background(), mcp.Config{Servers: map[string]mcp.ServerConfig{"everything": {Command: bin, Args: []string{"stdio"}}}}, mcp.Options{Dir: t.TempDir()})
	defer m.Close()
	ctx, cancel := context.WithCancel(testkit.Context(t))
	errc := make(chan error, 1)
	go func() {
		_, err := tool(t, m, "mcp__everything__trigger-long-running-operation").Run(ctx, nil, json.RawMessage(`{"duration":60,"steps":60}`))
		errc <- err
	}()
	cancel()
	if err := <-errc; category(err) != tools.Cancelled {
		t.Fatalf("cancelled call: %v", err)
	}
	if res, err := call(t, tool(t, m, "mcp__everything__echo"), `{"message":"still here"}`); err != nil || !strings.Contains(res.Output, "still here") {
		t.Fatalf("echo after a cancelled call = %+v, %v", res, err)
	}
}

// server-filesystem: a file in its allowed directory is read; one outside
// it is refused by the server, a tool_error the model sees.
func TestFilesystemServerReadsInsideAndRefusesOutside(t *testing.T) {
	bin := mcpservers.Bin(t, mcpservers.Filesystem)
	allowed, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(allowed, "notes.txt"), []byte("the notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("the secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := mcp.Start(context.Background(), mcp.Config{Servers: map[string]mcp.ServerConfig{"fs": {Command: bin, Args: []string{allowed}}}}, mcp.Options{Dir: allowed})
	defer m.Close()
	read := tool(t, m, "mcp__fs__read_text_file")
	res, err := call(t, read, fmt.Sprintf(`{"path":%q}`, filepath.Join(allowed, "notes.txt")))
	if err != nil || !strings.Contains(res.Output, "the notes") {
		t.Fatalf("read inside = %+v, %v", res, err)
	}
	_, err = call(t, read, fmt.Sprintf(`{"path":%q}`, filepath.Join(outside, "secret.txt")))
	if category(err) != mcp.ToolError || strings.Contains(err.Error(), "the secret") {
		t.Fatalf("read outside = %v, want a tool_error without the file's content", err)
	}
}

// A command that does not exist: the server is restarting, the failure
// says why, and Start did not wait for ever.
func TestAServerThatCannotStartIsReportedRestarting(t *testing.T) {
	m := mcp.Start(context.Background(), mcp.Config{Servers: map[string]mcp.ServerConfig{"ghost": {Type: mcp.TypeStdio, Command: filepath.Join(t.TempDir(), "no-such-server")}}}, mcp.Options{Dir: t.TempDir()})
	defer m.Close()
	st, _ := m.Status("ghost")
	if st.State != mcp.StateRestarting || !strings.Contains(st.LastError, "no-such-server") {
		t.Fatalf("status %+v", st)
	}
	if f := m.Facts()["mcp_server.ghost"]; !strings.HasPrefix(f, "restarting") || !strings.Contains(f, "failed to start") {
		t.Fatalf("facts %q", f)
	}
	if len(m.Tools()) != 0 || len(m.Notices()) != 1 {
		t.Fatalf("tools %v, notices %v", m.Tools(), m.Notices())
	}
}

// The streamable HTTP transport, against server-everything serving it:
// the configured headers go with every request, and a server that is not
// up yet when the worker starts is tried again until it is.
func TestEverythingOverStreamableHTTP(t *testing.T) {
	bin := mcpservers.Bin(t, mcpservers.Everything)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// A proxy in front of it sees what the worker sends.
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	var headed, bare atomic.Int32
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // refused until the server listens
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer t0k" {
			headed.Add(1)
		} else {
			bare.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	cfg := mcp.Config{Servers: map[string]mcp.ServerConfig{"web": {Type: mcp.TypeHTTP, URL: proxy.URL + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer t0k"}}}}
	m := mcp.Start(context.Background(), cfg, mcp.Options{Dir: t.TempDir(), MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	defer m.Close()
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testkit.Eventually(t, "the http server is reached", func() bool {
		st, _ := m.Status("web")
		return st.State == mcp.StateRunning
	})
	res, err := call(t, tool(t, m, "mcp__web__echo"), `{"message":"over http"}`)
	if err != nil || !strings.Contains(res.Output, "over http") {
		t.Fatalf("echo over http = %+v, %v", res, err)
	}
	if headed.Load() == 0 || bare.Load() != 0 {
		t.Fatalf("requests with the configured header: %d, without: %d", headed.Load(), bare.Load())
	}
}
