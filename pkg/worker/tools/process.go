package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// Process is a long-lived command started by the shell tool's background
// mode. Its holder (the worker, for the turn that started it) writes its
// stdin, receives its output through the writers given to Start, waits
// for it and kills it; it runs in its own process group so Kill stops
// what it started too.
type Process struct {
	Command string
	Cwd     string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
}

// IsBackground says whether shell arguments ask for a background process.
func (s Shell) IsBackground(raw json.RawMessage) bool {
	a, err := s.parse(raw)
	return err == nil && a.Background
}

// Start starts a background command with stdout and stderr going to the
// given writers (called from the process's copy goroutines, in order per
// stream). The arguments' stdin, if any, is written first; the pipe stays
// open for Write. No timeout applies: the holder bounds the process's
// life (the worker kills it when its turn ends).
func (s Shell) Start(sb *Sandbox, raw json.RawMessage, stdout, stderr io.Writer) (*Process, error) {
	a, err := s.parse(raw)
	if err != nil {
		return nil, err
	}
	cwd, err := a.cwd(sb)
	if err != nil {
		return nil, err
	}
	argv := sb.shellArgv(a.Command)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.Env = sb.shellEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A grandchild that keeps the output open must not hold Wait forever
	// once the command itself has exited.
	cmd.WaitDelay = time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fail(IOError, "%v", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fail(IOError, "%v", err)
	}
	p := &Process{Command: a.Command, Cwd: cwd, cmd: cmd, stdin: in}
	if a.Stdin != "" {
		if _, err := io.WriteString(in, a.Stdin); err != nil {
			p.Kill()
			_ = cmd.Wait()
			return nil, fail(IOError, "writing stdin: %v", err)
		}
	}
	return p, nil
}

// Pid is the process's (and its group's) id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Write writes to the process's stdin.
func (p *Process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// CloseStdin closes the stdin pipe (end of input).
func (p *Process) CloseStdin() error { return p.stdin.Close() }

// Kill sends SIGKILL to the process group.
func (p *Process) Kill() error { return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }

// Exit is how a process ended.
type Exit struct {
	// Code is the exit status; -1 when a signal ended it.
	Code int
	// Signal names the signal that ended it ("" if it exited).
	Signal string
	// Err is a failure to wait for it (an I/O error), not an exit status.
	Err error
}

// Wait waits for the process to end and its output to be copied.
func (p *Process) Wait() Exit {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return Exit{Code: 0}
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return Exit{Code: -1, Signal: signalName(ws.Signal())}
		}
		return Exit{Code: ee.ExitCode()}
	case errors.Is(err, exec.ErrWaitDelay):
		// The command exited; something it started held the output open.
		return Exit{Code: p.cmd.ProcessState.ExitCode()}
	}
	return Exit{Code: -1, Err: err}
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return fmt.Sprintf("signal %d (%s)", int(s), s.String())
}
