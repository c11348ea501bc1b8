package security

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a caller without credentials can do to `agentruntime dev` before
// any credential is checked (docs/security.md, "Before credentials").

// procStatusKiB reads a field of /proc/<pid>/status in KiB (VmRSS: resident
// now; VmHWM: the most it has been resident).
func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kib
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// request is one HTTP/1.1 call as a browser or curl would send it; host,
// when set, replaces the Host header.
type request struct {
	method, path, host, origin string
	body                       []byte
	gzip                       bool
}

func send(t *testing.T, addr string, r request) (int, string) {
	t.Helper()
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, "http://"+addr+r.path, bytes.NewReader(r.body))
	require.NoError(t, err)
	if r.host != "" {
		req.Host = r.host
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// zeros is n MiB of zero bytes, gzipped: one gzip member of a MiB (about
// a KiB) repeated n times, which gzip readers read as one stream.
func zeros(t *testing.T, n int) []byte {
	t.Helper()
	var member bytes.Buffer
	zw, err := gzip.NewWriterLevel(&member, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(make([]byte, 1<<20))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return bytes.Repeat(member.Bytes(), n)
}

// A gzip body of a couple of hundred KiB that expands to 200 MiB, sent
// without credentials to Connect paths, is refused; the server's memory
// stays about where it was.
func TestGzipBombWithoutCredentials(t *testing.T) {
	p := startDev(t, t.TempDir(), "--no-worker", "--console=true")
	pid := p.Cmd.Process.Pid
	bomb := zeros(t, 200)

	// Warm up the paths the bomb takes, so the baseline includes them.
	code, body := send(t, p.Addr, request{path: "/grpc.health.v1.Health/Check", body: []byte(`{}`)})
	require.Equal(t, http.StatusOK, code, body)
	before := procStatusKiB(t, pid, "VmRSS")

	for _, path := range []string{
		"/grpc.health.v1.Health/Check",
		"/agentruntime.control.v1.ControlService/SubmitTurn",
		"/agentruntime.permission.v1.PermissionService/SetPermissionMode",
	} {
		code, body := send(t, p.Addr, request{path: path, body: bomb, gzip: true})
		assert.NotEqual(t, http.StatusOK, code, "%s: %s", path, body)
		assert.Contains(t, body, `"code":"resource_exhausted"`, path)
	}
	after, peak := procStatusKiB(t, pid, "VmRSS"), procStatusKiB(t, pid, "VmHWM")
	t.Logf("bomb %d KiB x3: VmRSS %d MiB before, %d MiB after, peak %d MiB", len(bomb)>>10, before>>10, after>>10, peak>>10)
	assert.Less(t, peak-before, int64(100<<10), "peak RSS grew by %d MiB", (peak-before)>>10)

	// The server still answers.
	code, body = send(t, p.Addr, request{path: "/grpc.health.v1.Health/Check", body: []byte(`{}`)})
	assert.Equal(t, http.StatusOK, code, body)
}

// Malformed JSON is the caller's error (400 invalid_argument), not the
// server's (500).
func TestMalformedJSON(t *testing.T) {
	p := startDev(t, t.TempDir(), "--no-worker", "--console=true")
	for _, body := range []string{`{"sessionId":`, `[]`, `{"sessionId": 7}`} {
		code, answer := send(t, p.Addr, request{path: "/agentruntime.control.v1.ControlService/SubmitTurn", body: []byte(body)})
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", body, answer)
		assert.Contains(t, answer, `"code":"invalid_argument"`, body)
	}
}

// DNS rebinding: a page at http://evil.example:PORT whose name now points
// at 127.0.0.1 reaches dev's port, but its requests carry its own name as
// Host and Origin. Nothing it sends is served, and the turn it submits
// creates no session.
func TestRebindingHostIsRefused(t *testing.T) {
	p := startDev(t, t.TempDir(), "--no-worker", "--console=true")
	_, port, err := net.SplitHostPort(p.Addr)
	require.NoError(t, err)
	evil := "evil.example:" + port
	submit := func(session string) []byte {
		return []byte(`{"sessionId":"` + session + `","threadId":"` + session + `-main","input":[{"text":"rm -rf ~"}]}`)
	}

	for _, r := range []request{
		{method: http.MethodGet, path: "/", host: evil, origin: "http://" + evil},
		{method: http.MethodGet, path: "/", host: evil},
		{path: "/agentruntime.permission.v1.PermissionService/SetPermissionMode", host: evil, origin: "http://" + evil,
			body: []byte(`{"scope":{"level":"POLICY_LEVEL_TENANT"},"mode":"PERMISSION_MODE_BYPASS"}`)},
		{path: "/agentruntime.control.v1.ControlService/SubmitTurn", host: evil, origin: "http://" + evil, body: submit("rebound")},
		{method: http.MethodOptions, path: "/agentruntime.control.v1.ControlService/SubmitTurn", host: evil, origin: "http://" + evil},
		// The loopback Host with the page's Origin: a cross-origin call.
		{path: "/agentruntime.control.v1.ControlService/SubmitTurn", origin: "http://" + evil, body: submit("rebound")},
	} {
		code, body := send(t, p.Addr, r)
		assert.Contains(t, []int{http.StatusMisdirectedRequest, http.StatusForbidden}, code, "%s %s Host %q Origin %q: %s", r.method, r.path, r.host, r.origin, body)
	}

	// The machine's own clients still work, under each loopback name.
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		code, body := send(t, p.Addr, request{method: http.MethodGet, path: "/", host: host})
		assert.Equal(t, http.StatusOK, code, "console at %s: %s", host, body)
	}
	code, body := send(t, p.Addr, request{path: "/agentruntime.control.v1.ControlService/SubmitTurn", origin: "http://" + p.Addr, body: submit("legit")})
	require.Equal(t, http.StatusOK, code, body)
	var submitted struct{ Sequence string }
	require.NoError(t, json.Unmarshal([]byte(body), &submitted), body)

	// Read the sessions as of the legitimate submit: only it made one.
	code, body = send(t, p.Addr, request{path: "/agentruntime.control.v1.ControlService/ListSessions",
		body: []byte(`{"minSequence":"` + submitted.Sequence + `"}`)})
	require.Equal(t, http.StatusOK, code, body)
	var listed struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &listed), body)
	var ids []string
	for _, s := range listed.Sessions {
		ids = append(ids, s.SessionID)
	}
	assert.Equal(t, []string{"legit"}, ids)
}
