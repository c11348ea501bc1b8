package domain

import (
	"testing"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// TestShellCommandsFailSafe: commands that were once judged read-only and
// ran without asking, though they write, run programs or read outside the
// workspace. Each must now ask (interactive modes) or be denied (never),
// as the mode says; none may run sandboxed.
func TestShellCommandsFailSafe(t *testing.T) {
	const (
		ask  = eventsv1.Decision_DECISION_ASK
		deny = eventsv1.Decision_DECISION_DENY
	)
	def, onRequest, never := eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT, eventsv1.PermissionMode_PERMISSION_MODE_ON_REQUEST, eventsv1.PermissionMode_PERMISSION_MODE_NEVER
	// The default profile: read-only, no roots; the call's cwd is the
	// workspace.
	defaultProfile := func(mode eventsv1.PermissionMode) Policy {
		return Policy{Mode: mode, Interactive: true, Sandbox: DefaultSandbox()}
	}
	// A workspace-write profile with read roots set.
	withReadRoots := func(mode eventsv1.PermissionMode) Policy {
		p := workspacePolicy(mode)
		p.Sandbox.ReadRoots = []string{"/work", "/usr/share/doc"}
		return p
	}
	for _, tc := range []struct {
		cmd    string
		policy Policy
		want   eventsv1.Decision
	}{
		// git runs what its configuration says: fsmonitor, pagers, diff drivers.
		{"git -c core.fsmonitor='touch /tmp/x' status", defaultProfile(def), ask},
		{"git -c core.fsmonitor='touch /tmp/x' status", withReadRoots(def), ask},
		{"git --config-env=core.fsmonitor=EVIL status", defaultProfile(def), ask},
		{"git -C /tmp/other status", defaultProfile(def), ask},
		{"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='touch /tmp/x' git status", defaultProfile(def), ask},
		{"env GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=x git status", defaultProfile(def), ask},
		{"export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=x; git status", defaultProfile(def), ask},
		{"LD_PRELOAD=/tmp/x.so ls", defaultProfile(def), ask},
		{"PAGER='sh -c evil' git log", defaultProfile(def), ask},
		{"PATH=/tmp/evil; ls", defaultProfile(def), ask},
		{"for PATH in /tmp/evil; do ls; done", defaultProfile(def), ask},
		{"LC_ALL=/tmp/evil ls", defaultProfile(def), ask},
		{"git diff --output=/tmp/x", defaultProfile(def), ask},
		{"git diff --ext-diff", defaultProfile(def), ask},
		{"git log -p --textconv", defaultProfile(def), ask},
		{"git --paginate log", defaultProfile(def), ask},
		{"git grep -O foo", defaultProfile(def), ask},
		{"git branch new-branch", defaultProfile(def), ask},
		{"git config core.pager evil", defaultProfile(def), ask},
		// Options that write or run programs.
		{"sort -o /outside/file README.md", defaultProfile(def), ask},
		{"sort -o /outside/file README.md", withReadRoots(onRequest), ask},
		{"sort -o /outside/file README.md", withReadRoots(never), deny},
		{"sort --output=/outside/file README.md", withReadRoots(onRequest), ask},
		{"sort --compress-program=sh README.md", defaultProfile(def), ask},
		{"find . -fprint /outside/x", withReadRoots(onRequest), ask},
		{"find . -fprintf /outside/x %p", defaultProfile(def), ask},
		{"find . -fls /outside/x", defaultProfile(def), ask},
		{"find . -exec touch {} ;", defaultProfile(def), ask},
		{"find . -execdir sh -c x {} +", defaultProfile(def), ask},
		{"find . -ok rm {} ;", defaultProfile(def), ask},
		{"find . -okdir rm {} ;", defaultProfile(def), ask},
		{"find . -delete", defaultProfile(def), ask},
		{"find /etc -name x -exec cat {} ;", withReadRoots(onRequest), ask},
		{"find . -exec sh -c 'rm -rf /' ;", withReadRoots(onRequest), ask},
		{"find . -execdir cp {} /outside ;", withReadRoots(onRequest), ask},
		{"trap 'rm -rf /' EXIT; ls", withReadRoots(onRequest), ask},
		{"trap \"$X\" EXIT; ls", withReadRoots(onRequest), ask},
		{"watch -n 1 'touch /outside/x'", withReadRoots(onRequest), ask},
		{"find -L . -name x", defaultProfile(def), ask},
		{"rg --pre ./evil foo", defaultProfile(def), ask},
		{"rg --pre-glob '*' --pre cat foo", defaultProfile(def), ask},
		{"rg -z foo", defaultProfile(def), ask},
		{"rg --follow foo", defaultProfile(def), ask},
		{"sed -i s/a/b/ README.md", defaultProfile(def), ask},
		{"sed 'w /tmp/out' README.md", defaultProfile(def), ask},
		{"sed -n 's/a/b/w /tmp/out' README.md", defaultProfile(def), ask},
		{"sed 's/a/id/e' README.md", defaultProfile(def), ask},
		{"sed '1e id' README.md", defaultProfile(def), ask},
		{"sed 'r /etc/shadow' README.md", defaultProfile(def), ask},
		{"sed -f script.sed README.md", defaultProfile(def), ask},
		// GNU sed reads [/] as a bracket: the s command below writes
		// /tmp/evil although a scan that ends the regex at the first /
		// sees only p and an address.
		{"sed -n 's/[/]/g;p/w /tmp/evil' README.md", defaultProfile(def), ask},
		{`sed -n '\,[,],p;w /tmp/evil' README.md`, defaultProfile(def), ask},
		{"diff -r docs /etc", defaultProfile(def), ask},
		{"diff -r a b", defaultProfile(def), ask},
		{"jq -n 'import \"x\" as $x; $x'", defaultProfile(def), ask},
		{"jq -f filter.jq data.json", defaultProfile(def), ask},
		{"jq -L /tmp . data.json", defaultProfile(def), ask},
		{"cat README.md | tee out", defaultProfile(def), ask},
		{"echo /etc/shadow | xargs cat", defaultProfile(def), ask},
		{"ls | xargs rm", defaultProfile(def), ask},
		{"awk '{ system(\"touch /tmp/x\") }' README.md", defaultProfile(def), ask},
		{"awk '{ print > \"/tmp/x\" }' README.md", defaultProfile(def), ask},
		{"less README.md", defaultProfile(def), ask},
		{"more README.md", defaultProfile(def), ask},
		{"uniq README.md /outside/out", defaultProfile(def), ask},
		{"tree -o /outside/x", defaultProfile(def), ask},
		{"printf -v PATH /tmp/evil", defaultProfile(def), ask},
		{"date 010100002030", defaultProfile(def), ask},
		{"./ls", defaultProfile(def), ask},
		{"/tmp/evil/cat README.md", defaultProfile(def), ask},
		{"sudo cat README.md", defaultProfile(def), ask},
		{"env -C /etc cat passwd", defaultProfile(def), ask},
		{"env -S 'rm -rf /'", withReadRoots(onRequest), ask},
		{"unknown-tool --flag", defaultProfile(def), ask},
		{"ls --unknown-option", defaultProfile(def), ask},
		// Shells: every -c, in a flag group too.
		{"bash -lc 'rm -rf /'", defaultProfile(onRequest), ask},
		{"bash -lc 'rm -rf /'", withReadRoots(onRequest), ask},
		{"sh -ec 'rm -rf /'", withReadRoots(onRequest), ask},
		{"bash -x -c 'rm -rf /'", withReadRoots(onRequest), ask},
		{"bash -o pipefail -c 'rm -rf /'", withReadRoots(onRequest), ask},
		{"bash -lc 'rm -rf /'", withReadRoots(never), deny},
		{`bash -c "$SCRIPT"`, withReadRoots(onRequest), ask},
		{`eval "$SCRIPT"`, withReadRoots(onRequest), ask},
		{"cat $(echo /etc/passwd)", defaultProfile(def), ask},
		{"cat <(cat /etc/shadow)", defaultProfile(def), ask},
		{"diff README.md <(cat ~/.ssh/id_rsa)", defaultProfile(def), ask},
		{"echo $(cat /etc/shadow)", defaultProfile(def), ask},
		// Redirections: output to a file writes it, input reads it.
		{"echo hi > /outside/x", withReadRoots(onRequest), ask},
		{"echo hi >> /outside/x", withReadRoots(onRequest), ask},
		{"cat < /etc/shadow", defaultProfile(def), ask},
		{"wc -l < /etc/shadow", withReadRoots(def), ask},
		// Every operand of a read command is a read.
		{"cat /outside/secret", defaultProfile(def), ask},
		{"cat /outside/secret", defaultProfile(never), deny},
		{"cat ~/.ssh/id_rsa", defaultProfile(def), ask},
		{"cat ../../etc/passwd", defaultProfile(def), ask},
		{"grep -r . /etc", withReadRoots(def), ask},
		{"grep -r . /etc", defaultProfile(def), ask},
		{"grep -f /etc/shadow x README.md", defaultProfile(def), ask},
		{"jq . ~/.docker/config.json", withReadRoots(def), ask},
		{"jq . /etc/config.json", defaultProfile(def), ask},
		{"jq --rawfile s /etc/shadow -n '$s'", defaultProfile(def), ask},
		{"rg foo /etc", defaultProfile(def), ask},
		{"head -5 /etc/passwd", defaultProfile(def), ask},
		{"wc -l /etc/passwd", defaultProfile(def), ask},
		{"ls /", defaultProfile(def), ask},
		{"find / -name shadow", defaultProfile(def), ask},
		{"git diff --no-index /etc/passwd README.md", defaultProfile(def), ask},
		{"cat {/etc/shadow,README.md}", defaultProfile(def), ask},
		{"cat *.md", defaultProfile(def), ask},
		{"cat @(/etc/shadow)", defaultProfile(def), ask},
		{"cat <<EOF\n$(cat /etc/shadow)\nEOF", defaultProfile(def), ask},
		// The cwd: a cd moves the rest of its && chain only.
		{"cd /etc && cat passwd", defaultProfile(def), ask},
		{"cd /etc && (cd /work) && cat passwd", defaultProfile(def), ask},
		{"cd /etc; cd /work/nonexistent; cat passwd", defaultProfile(def), ask},
		{"cd /etc || true; cat passwd", defaultProfile(def), ask},
		{"pushd /etc && cat passwd", defaultProfile(def), ask},
		{"CDPATH=/; cd etc && cat passwd", defaultProfile(def), ask},
		{"cd /etc && ls", defaultProfile(def), ask},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			req := Request{Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE, Command: tc.cmd, Cwd: "/work"}
			ev := Evaluate(tc.policy, Verdict{}, req)
			if ev.Decision != tc.want {
				t.Fatalf("%s under %v: got %v (%s), want %v", tc.cmd, tc.policy.Mode, ev.Decision, ev.Reason, tc.want)
			}
		})
	}
}

// TestReadOnlyCommandsStaySandboxed: what only reads inside the workspace
// still runs without asking, under the default profile (the workspace is
// the call's cwd) and under one with read roots.
func TestReadOnlyCommandsStaySandboxed(t *testing.T) {
	policies := map[string]Policy{
		"default profile": {Mode: eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT, Interactive: true, Sandbox: DefaultSandbox()},
		"read roots": func() Policy {
			p := workspacePolicy(eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT)
			p.Sandbox.ReadRoots = []string{"/work"}
			return p
		}(),
	}
	for _, cmd := range []string{
		"ls", "ls -la", "ls -la src", "cat README.md", "cat ./README.md src/a.go", "git status", "git status --short",
		"git status -uno", "git log --oneline -5", "git log -n 3 --stat", "git diff", "git diff --cached --stat",
		"git show HEAD~1", "git show HEAD@{1}", "git --no-pager log --oneline", "git branch", "git branch -a",
		"git rev-parse HEAD", "git ls-files", "git blame README.md", "git grep -n foo", "git describe --tags",
		"grep -rn foo .", "grep -rn foo", "grep foo README.md", "grep -e foo -e bar README.md", "rg foo",
		"rg -n --hidden -g '!vendor' foo src", "head -5 file", "head -n 5 file", "tail -20 file", "wc -l file",
		"find . -name x", "find src -type f -name '*.go' -newer go.mod", "jq . package.json", "jq -r .name package.json",
		"sort README.md", "sort -u -k2 README.md | uniq -c", "cut -d: -f1 README.md", "diff a b", "stat file",
		"du -sh .", "tree -L 2", "pwd", "echo hello", "echo $(ls)", "printf '%s\\n' x", "which go", "true",
		"test -f go.mod && cat go.mod", "sed -n 1,10p README.md", "sed -n '/^[a-z]/p' README.md", "sed 's/[0-9][0-9]*/N/g;s|a|b|' f", "sed 's/a/b/g' README.md", "sed -n '/foo/,/bar/p' file",
		"cat README.md | grep foo | wc -l", "cd src && ls", "cd src && cat a.go", "LC_ALL=C sort file",
		"ls 2>/dev/null", "cat file > /dev/null", "wc -l < README.md", "env", "date +%s", "uname -a",
		"cat file | head -3", "basename /a/b", "sha256sum go.mod", "/usr/bin/ls",
	} {
		for name, p := range policies {
			t.Run(name+"/"+cmd, func(t *testing.T) {
				ev := Evaluate(p, Verdict{}, Request{Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE, Command: cmd, Cwd: "/work"})
				if ev.Decision != eventsv1.Decision_DECISION_SANDBOXED {
					t.Fatalf("%s: got %v (%s), want sandboxed; violations %+v", cmd, ev.Decision, ev.Reason, ev.Violations)
				}
				if ev.Category != SafeCommand {
					t.Errorf("%s: category %v, want a safe command", cmd, ev.Category)
				}
			})
		}
	}
}

// TestReadOnlyCommandReadPaths: each operand of a read command is a read
// path, options' values and patterns are not.
func TestReadOnlyCommandReadPaths(t *testing.T) {
	for _, tc := range []struct{ cmd, reads string }{
		{"grep -r . /etc", "/etc"},
		{"grep -rn foo", "."},
		{"grep foo a b", "a,b"},
		{"grep -e foo a b", "a,b"},
		{"grep -f pats a", "pats,a"},
		{"rg foo", "."},
		{"rg -g '*.go' foo src", "src"},
		{"jq . ~/.docker/config.json", "~/.docker/config.json"},
		{"jq -n --arg x y '$x'", ""},
		{"jq --args -n '$ARGS' a b", ""},
		{"ls", "."},
		{"find src lib -name x", "src,lib"},
		{"head -n 5 a", "a"},
		{"git log --oneline -5", "."},
		{"cat < in", "in"},
		{"sort -k 2 a b", "a,b"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			cmds, err := ParseCommand(tc.cmd)
			if err != nil || len(cmds) != 1 {
				t.Fatalf("%v %+v", err, cmds)
			}
			if got := joinComma(cmds[0].ReadPaths); got != tc.reads {
				t.Errorf("reads %q, want %q", got, tc.reads)
			}
			if !cmds[0].ReadOnly {
				t.Errorf("not read-only")
			}
		})
	}
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// TestShellReadThroughALink: a read operand the worker reports as a link
// leading out of the workspace is a read outside.
func TestShellReadThroughALink(t *testing.T) {
	p := Policy{Mode: eventsv1.PermissionMode_PERMISSION_MODE_DEFAULT, Interactive: true, Sandbox: DefaultSandbox()}
	req := Request{Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE, Command: "cat notes.txt", Cwd: "/work"}
	if ev := Evaluate(p, Verdict{}, req); ev.Decision != eventsv1.Decision_DECISION_SANDBOXED {
		t.Fatalf("without a link: %v (%s)", ev.Decision, ev.Reason)
	}
	req.Resolved = map[string]string{"/work/notes.txt": "/home/me/.ssh/id_rsa"}
	if ev := Evaluate(p, Verdict{}, req); ev.Decision != eventsv1.Decision_DECISION_ASK || len(ev.Violations) != 1 {
		t.Fatalf("through a link out: %v (%s) %+v", ev.Decision, ev.Reason, ev.Violations)
	}
	req.Command, req.Resolved = "cd docs && ls", map[string]string{"/work/docs": "/etc"}
	if ev := Evaluate(p, Verdict{}, req); ev.Decision != eventsv1.Decision_DECISION_ASK {
		t.Fatalf("a cd into a link out: %v (%s)", ev.Decision, ev.Reason)
	}
}
