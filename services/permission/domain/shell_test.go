package domain

import (
	"errors"
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	type sub struct {
		argv        string
		writes      string
		destructive string
		readOnly    bool
		hosts       string
	}
	for _, tc := range []struct {
		line string
		want []sub
	}{
		{"ls -la", []sub{{argv: "ls -la", readOnly: true}}},
		{"git status && git push --force origin main", []sub{
			{argv: "git status", readOnly: true},
			{argv: "git push --force origin main", destructive: "force push"},
		}},
		{"git push origin +main", []sub{{argv: "git push origin +main", destructive: "force push"}}},
		{"git push origin main", []sub{{argv: "git push origin main"}}},
		{"rm -rf build/ ; echo done", []sub{{argv: "rm -rf build/", writes: "build/", destructive: "recursive delete"}, {argv: "echo done", readOnly: true}}},
		{"rm -r -f x", []sub{{argv: "rm -r -f x", writes: "x", destructive: "recursive delete"}}},
		{"echo hi > out.txt", []sub{{argv: "echo hi", writes: "out.txt", destructive: "truncating redirect"}}},
		{"echo hi >> log.txt 2>&1", []sub{{argv: "echo hi", writes: "log.txt"}}},
		{"make 2>/dev/null", []sub{{argv: "make"}}},
		{"cat a | grep x | tee b", []sub{{argv: "cat a", readOnly: true}, {argv: "grep x", readOnly: true}, {argv: "tee b", writes: "b"}}},
		{"sudo rm -rf /", []sub{{argv: "sudo rm -rf /", writes: "/", destructive: "recursive delete"}}},
		{"env FOO=1 rm x", []sub{{argv: "env FOO=1 rm x", writes: "x", destructive: "delete"}}},
		{`bash -c "rm -rf /tmp/x && ls"`, []sub{{argv: "bash -c rm -rf /tmp/x && ls"}, {argv: "rm -rf /tmp/x", writes: "/tmp/x", destructive: "recursive delete"}, {argv: "ls", readOnly: true}}},
		{"echo $(rm -rf ~)", []sub{{argv: "echo $(rm -rf ~)", readOnly: true}, {argv: "rm -rf ~", writes: "~", destructive: "recursive delete"}}},
		{"(cd sub && git reset --hard)", []sub{{argv: "cd sub", readOnly: true}, {argv: "git reset --hard", destructive: "hard reset"}}},
		{"if true; then git clean -fd; fi", []sub{{argv: "true", readOnly: true}, {argv: "git clean -fd", destructive: "delete untracked files"}}},
		{`r\m -rf 'a b'`, []sub{{argv: "rm -rf a b", writes: "a b", destructive: "recursive delete"}}},
		{"curl -o out https://Example.com/x", []sub{{argv: "curl -o out https://Example.com/x", writes: "out", hosts: "example.com"}}},
		{"git clone git@github.com:o/r.git", []sub{{argv: "git clone git@github.com:o/r.git", hosts: "github.com"}}},
		{"dd if=/dev/zero of=/dev/sda", []sub{{argv: "dd if=/dev/zero of=/dev/sda", writes: "/dev/sda", destructive: "raw overwrite"}}},
		{"find . -name '*.o' -delete", []sub{{argv: "find . -name *.o -delete", destructive: "delete by find"}}},
		{"chmod -R 777 /srv", []sub{{argv: "chmod -R 777 /srv", writes: "/srv", destructive: "recursive permission change"}}},
		{"> empty", []sub{{argv: "", writes: "empty", destructive: "truncating redirect"}}},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got, err := ParseCommand(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d subcommands %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if a := strings.Join(g.Argv, " "); a != w.argv {
					t.Errorf("[%d] argv %q, want %q", i, a, w.argv)
				}
				if a := strings.Join(g.WritePaths, ","); a != w.writes {
					t.Errorf("[%d] writes %q, want %q", i, a, w.writes)
				}
				if g.DestructiveReason != w.destructive || g.Destructive != (w.destructive != "") {
					t.Errorf("[%d] destructive %v %q, want %q", i, g.Destructive, g.DestructiveReason, w.destructive)
				}
				if g.Destructive && (g.ImpactScope == "" || g.RollbackAdvice == "") {
					t.Errorf("[%d] destructive without impact scope or rollback advice", i)
				}
				if g.ReadOnly != w.readOnly {
					t.Errorf("[%d] read-only %v, want %v", i, g.ReadOnly, w.readOnly)
				}
				if a := strings.Join(g.Hosts, ","); a != w.hosts {
					t.Errorf("[%d] hosts %q, want %q", i, a, w.hosts)
				}
			}
		})
	}
}

func TestParseCommandRefusesWhatItCannotBound(t *testing.T) {
	for _, line := range []string{"echo 'unterminated", "if then fi", strings.Repeat(`bash -c "`, 1) + `bash -c 'bash -c \"bash -c \\\"bash -c x\\\"\"'"`} {
		if _, err := ParseCommand(line); !errors.Is(err, ErrUnparsableCommand) {
			t.Errorf("%q: err %v, want ErrUnparsableCommand", line, err)
		}
	}
	got, err := ParseCommand("echo $HOME > $OUT")
	if err != nil || len(got) != 1 || !got[0].Dynamic {
		t.Fatalf("expansions must mark the command dynamic: %+v %v", got, err)
	}
}

// FuzzParseCommand: the parser never panics, and whatever it accepts
// yields subcommands whose destructive ones explain themselves.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		"ls", "rm -rf /", "git push -f", "echo a > b", "bash -c 'rm x'", "a && b || c; d | e",
		"$(x) `y` ${z}", "cat <<EOF\nhi\nEOF", "f() { rm x; }; f", "x=1 y=2 cmd", "sudo -u root env A=1 rm -r d",
		"for i in *; do rm \"$i\"; done", "echo 'a\nb' >| c", "eval 'rm -rf /'",
		"git -c core.fsmonitor=x status", "GIT_DIR=x git log", "bash -lc 'cat /etc/x'", "sort -o x y", "find . -fprint x",
		"sed -n 's/a/b/w x' f", "jq --rawfile a b -n 1", "cd a && cat b", "env -S 'ls -l'", "rg --pre x y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cmds, err := ParseCommand(line)
		if err != nil {
			if !errors.Is(err, ErrUnparsableCommand) {
				t.Fatalf("unexpected error type: %v", err)
			}
			return
		}
		for _, c := range cmds {
			if c.Destructive && c.DestructiveReason == "" {
				t.Fatalf("%q: destructive without a reason", line)
			}
			if c.ReadOnly && len(c.WritePaths) > 0 {
				t.Fatalf("%q: read-only command writes %v", line, c.WritePaths)
			}
			if c.ReadOnly && (c.Network || c.Unbounded || c.Destructive || !envIsInert(c.Env)) {
				t.Fatalf("%q: read-only command %+v", line, c)
			}
		}
	})
}
