// Package confine runs a command under Landlock (the kernel's
// unprivileged access control, docs/adr/0014-confining-shell-commands.md):
// it may write only below its write roots and read only below its read
// roots and the few system paths a program needs to start
// (SystemReadDirs, SystemReadFiles, SystemWriteFiles); everything else on
// the filesystem is denied, to the command and to every process it starts.
//
// A Go process cannot confine a child between fork and exec, so the
// worker starts its own executable as a small helper: the helper applies
// the rules to itself and then replaces itself with the command (execve),
// which keeps the Landlock domain. The helper is entered through Main,
// which every program that runs a worker calls first thing in main (and
// every test binary that runs one, in TestMain).
package confine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// helperEnv marks a process started as the helper; the helper removes it
// before it runs the command.
const helperEnv = "AGENTRUNTIME_CONFINE_EXEC"

// SystemReadDirs may be read and executed by every confined command: the
// programs and libraries themselves, and the few /etc directories they
// resolve through (Debian's alternatives links, the loader's config, CA
// certificates). Missing ones are skipped.
var SystemReadDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/alternatives", "/etc/ld.so.conf.d", "/etc/ssl/certs"}

// SystemReadFiles may be read by every confined command: the loader's
// cache, user and group names, name resolution and the time zone, and the
// random and zero devices. Nothing else under /etc, /dev, /proc, /sys,
// /home, /root, /tmp or /var is readable unless a root holds it.
var SystemReadFiles = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/passwd", "/etc/group",
	"/etc/nsswitch.conf", "/etc/localtime", "/etc/hosts", "/etc/resolv.conf", "/etc/host.conf",
	"/dev/urandom", "/dev/random", "/dev/zero"}

// SystemWriteFiles may be written by every confined command (output
// thrown away).
var SystemWriteFiles = []string{"/dev/null"}

// CommandEnv is added to a confined command's environment. git treats a
// configuration file it cannot read as fatal, and the system's and the
// user's (/etc/gitconfig, ~/.gitconfig: outside the read roots, and the
// user's may hold credentials) are unreadable under confinement, so git
// is told to read neither.
var CommandEnv = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}

// Policy is what one command may touch beyond the system paths.
type Policy struct {
	// ReadRoots may be read (and their programs executed).
	ReadRoots []string
	// WriteRoots may be read, written, created in and removed from.
	WriteRoots []string
}

var mainCalled atomic.Bool

// Main runs the helper when this process was started as one (and then
// never returns); otherwise it returns at once and records that the
// program can be re-executed as a helper. Call it first in main (and in
// TestMain of tests that run a worker), before flags are parsed.
func Main() {
	if os.Getenv(helperEnv) == "" {
		mainCalled.Store(true)
		return
	}
	err := helper(os.Args[1:])
	// Only a failure returns: the command was not run.
	fmt.Fprintf(os.Stderr, "agentruntime sandbox: %v: the command was not run\n", err)
	os.Exit(126)
}

// helper parses --ro PATH, --rw PATH ... -- ARGV, restricts itself and
// execs ARGV.
func helper(args []string) error {
	var p Policy
	var argv []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--ro", "--rw":
			if i+1 >= len(args) {
				return fmt.Errorf("%s needs a path", args[i])
			}
			if args[i] == "--ro" {
				p.ReadRoots = append(p.ReadRoots, args[i+1])
			} else {
				p.WriteRoots = append(p.WriteRoots, args[i+1])
			}
			i++
		case "--":
			argv = args[i+1:]
			i = len(args)
		default:
			return fmt.Errorf("unexpected argument %q", args[i])
		}
	}
	if len(argv) == 0 {
		return errors.New("no command after --")
	}
	if err := os.Unsetenv(helperEnv); err != nil {
		return err
	}
	if err := restrict(p); err != nil {
		return err
	}
	path := argv[0]
	if !strings.Contains(path, "/") {
		var err error
		if path, err = exec.LookPath(path); err != nil {
			return err
		}
	}
	return syscall.Exec(path, argv, os.Environ())
}

// restrict applies the policy to this process (every thread): Landlock's
// filesystem rights of the newest ABI go-landlock knows, reduced to what
// the kernel supports (Capability says which), and, from ABI 6, no
// signals to and no abstract sockets of processes outside the domain (the
// worker among them).
func restrict(p Policy) error {
	rules := []landlock.Rule{
		landlock.RODirs(SystemReadDirs...).IgnoreIfMissing(),
		landlock.ROFiles(SystemReadFiles...).IgnoreIfMissing(),
		landlock.RWFiles(SystemWriteFiles...).IgnoreIfMissing(),
		// The process's own /proc entry (the command keeps the pid);
		// other processes', the worker's among them, stay unreadable.
		landlock.RODirs("/proc/self").IgnoreIfMissing(),
	}
	for _, r := range p.ReadRoots {
		if isDir(r) {
			rules = append(rules, landlock.RODirs(r).IgnoreIfMissing())
		} else {
			rules = append(rules, landlock.ROFiles(r).IgnoreIfMissing())
		}
	}
	for _, r := range p.WriteRoots {
		if isDir(r) {
			rules = append(rules, landlock.RWDirs(r).WithRefer().IgnoreIfMissing())
		} else {
			rules = append(rules, landlock.RWFiles(r).IgnoreIfMissing())
		}
	}
	if err := landlock.V11.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	if err := landlock.V11.BestEffort().RestrictScoped(); err != nil {
		return fmt.Errorf("landlock scopes: %w", err)
	}
	return nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Capability is whether this process can confine commands, and how.
type Capability struct {
	// Available: Wrap's commands run confined.
	Available bool
	// ABI is the kernel's Landlock ABI version (0: none).
	ABI int
	// Reason is the mechanism when available, what is missing when not.
	Reason string
	exe    string
}

// Probe finds out once whether commands can be confined here: Main was
// called (the helper is reachable), the kernel has Landlock enabled, and
// a helper actually starts and runs a command under it.
func Probe() Capability {
	if !mainCalled.Load() {
		return Capability{Reason: "the program did not call confine.Main first, so its executable cannot act as the sandbox helper"}
	}
	abi, err := llsys.LandlockGetABIVersion()
	switch {
	case err != nil:
		return Capability{Reason: fmt.Sprintf("the kernel has no usable Landlock (%v): it is not built in, or not enabled at boot (lsm=)", err)}
	case abi < 1:
		return Capability{Reason: "the kernel reports no Landlock ABI"}
	}
	exe, err := os.Executable()
	if err != nil {
		return Capability{ABI: abi, Reason: fmt.Sprintf("the worker's executable cannot be found (%v)", err)}
	}
	c := Capability{ABI: abi, exe: exe}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	argv, env := c.wrap(Policy{}, []string{"/bin/sh", "-c", "exit 0"})
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return Capability{ABI: abi, Reason: "the sandbox helper failed: " + msg}
	}
	c.Available = true
	c.Reason = fmt.Sprintf("Landlock ABI %d: writes only below the write roots, reads only below the read roots and the system paths (pkg/worker/confine)", abi)
	if abi < 3 {
		c.Reason += "; truncating a file is not confined below ABI 3"
	}
	return c
}

// Wrap is the command line that runs argv confined by p, and the
// variables to add to its environment. Only for an available capability.
func (c Capability) Wrap(p Policy, argv []string) (wrapped, env []string) {
	return c.wrap(p, argv)
}

// Prefix is what Wrap puts before argv.
func (c Capability) Prefix(p Policy) (prefix, env []string) {
	return c.wrap(p, nil)
}

func (c Capability) wrap(p Policy, argv []string) ([]string, []string) {
	out := []string{c.exe}
	for _, r := range p.ReadRoots {
		out = append(out, "--ro", r)
	}
	for _, r := range p.WriteRoots {
		out = append(out, "--rw", r)
	}
	out = append(append(out, "--"), argv...)
	return out, append([]string{helperEnv + "=1"}, CommandEnv...)
}
