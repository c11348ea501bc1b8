package worker

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/worker/confine"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// networkIsolation is how this host confines shell commands from the
// network, decided once when the worker is built: sandbox.applied says
// what was enforced, never more.
type networkIsolation struct {
	// argv is the command prefix that confines (empty: none available).
	argv []string
	// reason is the mechanism, or why there is none.
	reason string
}

// probeNetworkIsolation tries an unprivileged user + network namespace
// (unshare), which leaves a command no network interface that is up. The
// current user's id is mapped when unshare can (the command sees its real
// uid), else root's.
func probeNetworkIsolation(disabled bool) networkIsolation {
	if disabled {
		return networkIsolation{reason: "network isolation is disabled by the worker's configuration: shell commands have the host's network"}
	}
	path, err := exec.LookPath("unshare")
	if err != nil {
		return networkIsolation{reason: "unshare is not installed: shell commands have the host's network"}
	}
	var failures []string
	for _, mapping := range []string{"--map-current-user", "--map-root-user"} {
		argv := []string{path, "--user", "--net", mapping}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := exec.CommandContext(ctx, path, append(argv[1:], "/bin/sh", "-c", "exit 0")...).CombinedOutput()
		cancel()
		if err == nil {
			return networkIsolation{argv: argv, reason: "own user and network namespace (unshare --user --net " + mapping + "): no network interface is up"}
		}
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		failures = append(failures, mapping+": "+clip(msg, 200))
	}
	return networkIsolation{reason: "unshare cannot create a user and network namespace without privileges here (" +
		strings.Join(failures, "; ") + "): shell commands have the host's network"}
}

// probeConfinement finds out once whether shell commands can be confined
// on the filesystem here (pkg/worker/confine: Landlock through the
// worker's own executable).
func probeConfinement(disabled bool) confine.Capability {
	if disabled {
		return confine.Capability{Reason: "filesystem confinement is disabled by the worker's configuration"}
	}
	return confine.Probe()
}

// Confinement says whether shell commands the permission service runs
// sandboxed are confined on the filesystem here, and how or why not; a
// worker that cannot confine asks a person before running such a command.
func (w *Worker) Confinement() (enforced bool, reason string) {
	return w.confine.Available, w.confine.Reason
}

// enforcement is what the worker applies to one shell command: a
// filesystem policy (nil: the command sees the worker's filesystem view)
// and whether it gets its own network namespace.
type enforcement struct {
	fs      *confine.Policy
	isolate bool
}

// enforcementFor decides what a shell call runs under. The network is
// isolated whenever the host can, unless the call's profile grants the
// full network. The filesystem is confined when the decision was
// sandboxed (an allowed or approved call runs as decided, with no
// boundary) and the profile has one: writes below the profile's write
// roots (none for a read-only profile), reads below its read roots (its
// cwd when it names none, as the permission service reads it), each
// narrowed to the worker's own roots.
func (w *Worker) enforcementFor(perm permission) enforcement {
	p := perm.profile
	enf := enforcement{isolate: len(w.network.argv) > 0 && p.GetNetwork() != eventsv1.NetworkMode_NETWORK_MODE_FULL}
	if !perm.sandboxed || p.GetMode() == eventsv1.SandboxMode_SANDBOX_MODE_FULL_ACCESS {
		return enf
	}
	sb := &w.cfg.Sandbox
	var pol confine.Policy
	if p.GetMode() == eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE {
		pol.WriteRoots = intersectRoots(absPaths(p.GetWriteRoots()), absPaths(sb.WriteRoots))
	}
	read := p.GetReadRoots()
	if len(read) == 0 && p.GetCwd() != "" {
		read = []string{p.GetCwd()}
	}
	pol.ReadRoots = intersectRoots(absPaths(read), absPaths(append(append([]string{}, sb.EffectiveReadRoots()...), sb.WriteRoots...)))
	enf.fs = &pol
	return enf
}

// intersectRoots is where both sets of trees meet: of each pair where one
// holds the other, the inner one.
func intersectRoots(a, b []string) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, x := range a {
		for _, y := range b {
			switch {
			case within(x, y):
				add(x)
			case within(y, x):
				add(y)
			}
		}
	}
	return out
}

// within: p is root or below it.
func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// shellSandbox is the worker's sandbox with what one shell call runs
// under.
func (w *Worker) shellSandbox(enf enforcement) *tools.Sandbox {
	sb := w.cfg.Sandbox
	if !enf.isolate {
		sb.Isolate = nil
	}
	if enf.fs != nil {
		argv, env := w.confine.Prefix(*enf.fs)
		sb.Confine = tools.Wrapper{Argv: argv, Env: env}
	}
	return &sb
}

// appliedSandbox is the profile the worker enforces for a call of the
// named tool. For a shell command: the filesystem policy it is confined
// to (read-only or workspace-write, its read and write roots) or, when it
// is not confined, full access; the inherited variables, its time limit
// and how the network was (or could not be) confined. A tool that is not
// built in (an MCP server's) runs outside the sandbox: full access. The file tools
// check their paths themselves against the worker's roots, which is what
// they report, and open no connections of their own, so their network
// facet is not applicable.
func (w *Worker) appliedSandbox(name string, args json.RawMessage, acc tools.Access, enf enforcement) *permissionv1.ReportSandboxAppliedRequest {
	sb := &w.cfg.Sandbox
	p := &eventsv1.SandboxProfile{Mode: eventsv1.SandboxMode_SANDBOX_MODE_READ_ONLY, Cwd: absPath(sb.Root),
		ReadRoots: absPaths(sb.EffectiveReadRoots()), WriteRoots: absPaths(sb.WriteRoots)}
	if len(sb.WriteRoots) > 0 {
		p.Mode = eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE
	}
	if acc.Cwd != "" {
		p.Cwd = absPath(acc.Cwd)
	}
	req := &permissionv1.ReportSandboxAppliedRequest{Name: name, Profile: p,
		NetworkEnforcement:       eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_NOT_APPLICABLE,
		NetworkEnforcementReason: "the tool runs inside the worker process and opens no connections of its own"}
	if _, builtin := w.tools[name]; !builtin {
		// A ToolSource's tool (an MCP server's) runs in a process of its
		// own, outside the worker's sandbox.
		p.Mode, p.ReadRoots, p.WriteRoots = eventsv1.SandboxMode_SANDBOX_MODE_FULL_ACCESS, nil, nil
		req.NetworkEnforcement = eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_UNAVAILABLE
		req.NetworkEnforcementReason = "the tool runs in its MCP server, a process of its own outside the worker's sandbox, with the rights it was started with"
		return req
	}
	if sh, ok := w.tools[name].(tools.Shell); ok {
		switch {
		case enf.fs == nil:
			p.Mode, p.ReadRoots, p.WriteRoots = eventsv1.SandboxMode_SANDBOX_MODE_FULL_ACCESS, nil, nil
		case len(enf.fs.WriteRoots) > 0:
			p.Mode, p.ReadRoots, p.WriteRoots = eventsv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE, enf.fs.ReadRoots, enf.fs.WriteRoots
		default:
			p.Mode, p.ReadRoots, p.WriteRoots = eventsv1.SandboxMode_SANDBOX_MODE_READ_ONLY, enf.fs.ReadRoots, nil
		}
		req.EnvAllowlist = sb.EffectiveEnvAllow()
		if d := sh.WallTime(sb, args); d > 0 {
			p.ProcessLimits = &eventsv1.ProcessLimits{WallTime: durationpb.New(d)}
		}
		switch {
		case enf.isolate:
			req.NetworkEnforcement, p.Network = eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_ENFORCED, eventsv1.NetworkMode_NETWORK_MODE_NONE
			req.NetworkEnforcementReason = w.network.reason
		case len(w.network.argv) > 0:
			// The profile grants the network: nothing to enforce.
			req.NetworkEnforcement, p.Network = eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_NOT_APPLICABLE, eventsv1.NetworkMode_NETWORK_MODE_FULL
			req.NetworkEnforcementReason = "the sandbox profile grants the full network: the command has the host's network"
		default:
			req.NetworkEnforcement, p.Network = eventsv1.NetworkEnforcement_NETWORK_ENFORCEMENT_UNAVAILABLE, eventsv1.NetworkMode_NETWORK_MODE_FULL
			req.NetworkEnforcementReason = w.network.reason
		}
	}
	return req
}

// reportApplied records sandbox.applied through the permission service
// (the owner of sandbox.*) for a tool call or, with a process id, for the
// background process the call started.
func (tu *turn) reportApplied(ctx context.Context, req *permissionv1.ReportSandboxAppliedRequest, step, call, process, evalID string) error {
	req.SessionId, req.ThreadId, req.TurnId, req.EvaluationId = tu.t.GetSessionId(), tu.t.GetThreadId(), tu.t.GetTurnId(), evalID
	req.Target, req.StepId, req.ToolCallId = eventsv1.SandboxTarget_SANDBOX_TARGET_TOOL, step, call
	if process != "" {
		req.Target, req.StepId, req.ToolCallId, req.ProcessId = eventsv1.SandboxTarget_SANDBOX_TARGET_PROCESS, "", "", process
	}
	if err := tu.flush(ctx); err != nil {
		return err
	}
	return tu.w.retryInfra(ctx, "permission.ReportSandboxApplied", func(ctx context.Context) error {
		_, err := tu.w.permission.ReportSandboxApplied(ctx, req)
		return err
	})
}

// reportViolation records the worker's own refusal (a path outside the
// roots, a link leading out) as sandbox.violation with the call's ids, so
// the denial is explained as the sandbox's and not a generic failure.
// Other errors are not violations and report nothing.
func (tu *turn) reportViolation(ctx context.Context, step, call, evalID string, err error) {
	var f *tools.Failure
	if !errors.As(err, &f) || f.Category != tools.SandboxViolation || f.Path == "" {
		return
	}
	rerr := tu.flush(ctx)
	if rerr == nil {
		_, rerr = tu.w.permission.ReportSandboxViolation(ctx, &permissionv1.ReportSandboxViolationRequest{
			SessionId: tu.t.GetSessionId(), ThreadId: tu.t.GetThreadId(), TurnId: tu.t.GetTurnId(), StepId: step, ToolCallId: call,
			Kind: f.Violation, Target: f.Path, Reason: clip(f.Message, 1024), EvaluationId: evalID, Blocked: true,
		})
	}
	if rerr != nil {
		// The access was stopped either way; tool.failed still says why.
		tu.w.cfg.Logger.WarnContext(ctx, "reporting a sandbox violation", "turn_id", tu.t.GetTurnId(), "path", f.Path, "error", rerr)
	}
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func absPaths(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = absPath(p)
	}
	return out
}
