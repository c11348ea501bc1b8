package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Shell runs a command line with /bin/sh in the sandbox: cwd inside the
// read roots, only allowlisted environment variables, optional stdin, a
// timeout that kills the whole process group, and capped output.
type Shell struct{}

type shellArgs struct {
	Command   string `json:"command"`
	Cwd       string `json:"cwd"`
	Stdin     string `json:"stdin"`
	TimeoutMs int64  `json:"timeout_ms"`
	// Background starts a long-lived process instead (see Start): the call
	// answers its process id at once.
	Background bool `json:"background"`
}

func (Shell) Spec() Spec {
	return Spec{Name: "shell", Description: "Run a shell command (sh -c) in the workspace; answers its exit status and combined output. With background: true it starts a long-lived process and answers its process id at once (its output, input and end are reported as process facts; wait for it with process_wait).",
		Schema:      `{"type":"object","properties":{"command":{"type":"string"},"cwd":{"type":"string"},"stdin":{"type":"string"},"timeout_ms":{"type":"integer","minimum":1},"background":{"type":"boolean"}},"required":["command"],"additionalProperties":false}`,
		Destructive: true, Interrupt: "cancel"}
}

func (Shell) parse(raw json.RawMessage) (shellArgs, error) {
	var a shellArgs
	if err := decode(raw, &a); err != nil {
		return a, err
	}
	if strings.TrimSpace(a.Command) == "" {
		return a, fail(InvalidArguments, "command is required")
	}
	return a, nil
}

func (s Shell) Plan(sb *Sandbox, raw json.RawMessage) (Access, error) {
	a, err := s.parse(raw)
	if err != nil {
		return Access{}, err
	}
	// The cwd is checked before the call is judged, not only when it
	// runs: the permission service takes the call's cwd as the workspace
	// a profile without read roots reads.
	cwd, err := a.cwd(sb)
	if err != nil {
		return Access{}, err
	}
	cwd = absPath(cwd)
	roots := append(append([]string{}, sb.readRoots()...), sb.WriteRoots...)
	for i, r := range roots {
		roots[i] = absPath(r)
	}
	resolved, complete := ResolveShellPaths(a.Command, cwd, roots)
	if !complete {
		return Access{}, fail(InvalidArguments, "the command names more paths than can be checked for links (at most %d words, %d paths, %d links): split it", maxWords, maxProbes, maxResolved)
	}
	return Access{Access: eventsv1.Access_ACCESS_EXECUTE, Command: a.Command, Cwd: cwd, Resolved: resolved}, nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func (s Shell) Run(ctx context.Context, sb *Sandbox, raw json.RawMessage) (Result, error) {
	a, err := s.parse(raw)
	if err != nil {
		return Result{}, err
	}
	if a.Background {
		// A background process outlives the call: only a runner that can
		// hold it for the turn (the worker, through Start) runs it.
		return Result{}, fail(InvalidArguments, "background processes are not supported by this runner")
	}
	cwd, err := a.cwd(sb)
	if err != nil {
		return Result{}, err
	}
	timeout := a.wallTime(sb)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := sb.shellArgv(a.Command)
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.Env = sb.shellEnv()
	cmd.Stdin = strings.NewReader(a.Stdin)
	// Its own process group, so a timeout or an interrupt stops what the
	// command started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out capped
	out.max = sb.maxOutput()
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	res := Result{Output: out.buf.String(), Truncated: out.dropped > 0, Bytes: out.buf.Len() + out.dropped}
	switch {
	case ctx.Err() != nil:
		return Result{}, &Failure{Category: Cancelled, Message: "command interrupted", Output: res.Output}
	case cctx.Err() != nil:
		return Result{}, &Failure{Category: TimedOut, Message: fmt.Sprintf("command exceeded %s", timeout), Output: res.Output}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		res.Output = fmt.Sprintf("exit status %d\n%s", exit.ExitCode(), res.Output)
		return Result{}, &Failure{Category: ExitStatus, Message: fmt.Sprintf("exit status %d", exit.ExitCode()), Output: res.Output}
	}
	if err != nil {
		return Result{}, fail(IOError, "%v", err)
	}
	res.Output = "exit status 0\n" + res.Output
	return res, nil
}

// WallTime is the time limit a foreground call of these arguments runs
// under (0 for a background process: its holder bounds its life).
func (s Shell) WallTime(sb *Sandbox, raw json.RawMessage) time.Duration {
	a, err := s.parse(raw)
	if err != nil || a.Background {
		return 0
	}
	return a.wallTime(sb)
}

func (a shellArgs) wallTime(sb *Sandbox) time.Duration {
	if a.TimeoutMs > 0 {
		return time.Duration(a.TimeoutMs) * time.Millisecond
	}
	if sb.ShellTimeout > 0 {
		return sb.ShellTimeout
	}
	return 2 * time.Minute
}

func allowedEnv(allow []string) []string {
	var env []string
	for _, k := range allow {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (a shellArgs) cwd(sb *Sandbox) (string, error) {
	if a.Cwd == "" {
		return sb.Root, nil
	}
	return sb.CheckRead(a.Cwd)
}
