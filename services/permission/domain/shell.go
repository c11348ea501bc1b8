package domain

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ErrUnparsableCommand: the command line is not valid shell. It is judged as
// one opaque, destructive-unknown command (never allowed by a prefix rule).
var ErrUnparsableCommand = errors.New("command cannot be parsed")

// maxNesting bounds how deep `bash -c '...'` and `eval` strings are parsed.
const maxNesting = 4

// Command is one simple command of a shell command line.
type Command struct {
	// Argv with quotes resolved. A word the parser cannot resolve without
	// running the shell (expansions, substitutions) is kept in its source
	// form and marks the command Dynamic.
	Argv []string
	// Dynamic: some word depends on run-time expansion.
	Dynamic bool
	// WritePaths and ReadPaths are raw (not normalized) targets: redirect
	// targets and arguments of commands known to write or read files.
	WritePaths []string
	ReadPaths  []string
	// Hosts it reaches over the network.
	Hosts   []string
	Network bool
	// Destructive: deletes, overwrites or rewrites history.
	Destructive       bool
	DestructiveReason string
	ImpactScope       string
	RollbackAdvice    string
	// ReadOnly: a command known to only read (ls, cat, git status...).
	ReadOnly bool
}

// ParseCommand splits a command line into its simple commands: every
// command of pipelines, lists (&&, ||, ;), subshells, blocks, command and
// process substitutions, and the strings given to `sh -c` and `eval`, so
// that each is judged on its own. Wrappers (sudo, env, nice, xargs, ...)
// are looked through: `sudo rm -rf /` is judged as `rm -rf /`.
func ParseCommand(line string) ([]Command, error) {
	return parseCommand(line, 0)
}

func parseCommand(line string, depth int) ([]Command, error) {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnparsableCommand, err)
	}
	var out []Command
	var walkErr error
	syntax.Walk(file, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok || walkErr != nil {
			return walkErr == nil
		}
		cmd := Command{}
		if call, ok := st.Cmd.(*syntax.CallExpr); ok {
			for _, w := range call.Args {
				v, lit := wordValue(w)
				if !lit {
					cmd.Dynamic = true
				}
				cmd.Argv = append(cmd.Argv, v)
			}
		} else if st.Cmd != nil && len(st.Redirs) == 0 {
			// Compound commands (if, while, subshells, blocks) are judged
			// through the statements inside them, which Walk visits.
			return true
		}
		for _, r := range st.Redirs {
			applyRedirect(&cmd, r)
		}
		nested, err := classify(&cmd, depth)
		if err != nil {
			walkErr = err
			return false
		}
		out = append(out, cmd)
		out = append(out, nested...)
		return true
	})
	if walkErr != nil {
		return nil, walkErr
	}
	return out, nil
}

// wordValue resolves a word's quotes; ok is false when the word needs the
// shell to expand it, and the value is then the word's source form.
func wordValue(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeUnquoted(x.Value))
		case *syntax.SglQuoted:
			if x.Dollar {
				return source(w), false
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return source(w), false
				}
				b.WriteString(unescapeDoubleQuoted(lit.Value))
			}
		default:
			return source(w), false
		}
	}
	return b.String(), true
}

func source(n syntax.Node) string {
	var buf bytes.Buffer
	if err := syntax.NewPrinter().Print(&buf, n); err != nil {
		return "?"
	}
	return buf.String()
}

func unescapeUnquoted(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unescapeDoubleQuoted(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func applyRedirect(cmd *Command, r *syntax.Redirect) {
	if r.Word == nil {
		return
	}
	target, lit := wordValue(r.Word)
	if !lit {
		cmd.Dynamic = true
	}
	switch r.Op {
	case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll, syntax.RdrAllClob:
		if target == "/dev/null" {
			return
		}
		cmd.WritePaths = append(cmd.WritePaths, target)
		markDestructive(cmd, "truncating redirect", "contents of "+target,
			"restore "+target+" from version control or a backup; its previous contents are gone")
	case syntax.AppOut, syntax.AppClob, syntax.AppAll, syntax.AppAllClob:
		if target != "/dev/null" {
			cmd.WritePaths = append(cmd.WritePaths, target)
		}
	case syntax.RdrInOut:
		cmd.WritePaths = append(cmd.WritePaths, target)
	case syntax.RdrIn:
		cmd.ReadPaths = append(cmd.ReadPaths, target)
	case syntax.DplOut, syntax.DplIn:
		// fd duplication (2>&1) touches no file, unless the target is a name.
		if !isFD(target) && target != "-" {
			cmd.WritePaths = append(cmd.WritePaths, target)
		}
	}
}

func isFD(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func markDestructive(cmd *Command, reason, impact, rollback string) {
	if cmd.Destructive {
		return
	}
	cmd.Destructive, cmd.DestructiveReason, cmd.ImpactScope, cmd.RollbackAdvice = true, reason, impact, rollback
}

// wrappers run their arguments as a command; the value says how many
// leading flags they take before it (-1: every leading "-x" and VAR=value).
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "env": true, "nice": true, "nohup": true, "time": true,
	"command": true, "exec": true, "xargs": true, "timeout": true, "stdbuf": true, "ionice": true,
}

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true}

// readOnlyCommands only read (with no writing flags, checked below).
var readOnlyCommands = map[string]bool{
	"ls": true, "cat": true, "head": true, "tail": true, "less": true, "more": true, "wc": true,
	"stat": true, "file": true, "grep": true, "rg": true, "pwd": true, "echo": true, "printf": true,
	"which": true, "whoami": true, "date": true, "tree": true, "du": true, "df": true, "diff": true,
	"true": true, "false": true, "test": true, "[": true, "basename": true, "dirname": true,
	"realpath": true, "sort": true, "uniq": true, "cut": true, "tr": true, "jq": true, "env": true,
}

var readOnlyGit = map[string]bool{
	"status": true, "log": true, "diff": true, "show": true, "branch": false, "rev-parse": true,
	"ls-files": true, "blame": true, "grep": true, "describe": true,
}

var networkCommands = map[string]bool{
	"curl": true, "wget": true, "ssh": true, "scp": true, "rsync": true, "nc": true, "ftp": true,
	"sftp": true, "telnet": true, "ping": true,
}

// classify fills in what a command does from its argv, and returns the
// commands nested in it (the string of `sh -c`, `eval`).
func classify(cmd *Command, depth int) ([]Command, error) {
	argv := effectiveArgv(cmd.Argv)
	if len(argv) == 0 {
		return nil, nil
	}
	name := path.Base(argv[0])
	args := argv[1:]
	var nested []Command
	switch {
	case shells[name] || name == "eval":
		script := ""
		if name == "eval" {
			script = strings.Join(args, " ")
		} else {
			for i, a := range args {
				if a == "-c" && i+1 < len(args) {
					script = args[i+1]
					break
				}
			}
		}
		if script != "" {
			if depth >= maxNesting {
				return nil, fmt.Errorf("%w: shell strings nested deeper than %d", ErrUnparsableCommand, maxNesting)
			}
			inner, err := parseCommand(script, depth+1)
			if err != nil {
				return nil, err
			}
			nested = inner
		}
	case name == "rm" || name == "rmdir" || name == "unlink" || name == "shred":
		paths := operands(args)
		cmd.WritePaths = append(cmd.WritePaths, paths...)
		reason := "delete"
		if name == "rm" && (hasFlag(args, 'r', "--recursive") || hasFlag(args, 'R', "")) {
			reason = "recursive delete"
		}
		markDestructive(cmd, reason, "files "+strings.Join(paths, ", "),
			"restore the files from version control or a backup; deleted files cannot be recovered by the runtime")
	case name == "mv" || name == "cp" || name == "ln" || name == "install":
		ops := operands(args)
		if len(ops) > 0 {
			cmd.WritePaths = append(cmd.WritePaths, ops[len(ops)-1])
			if name == "mv" {
				cmd.WritePaths = append(cmd.WritePaths, ops[:len(ops)-1]...)
			} else {
				cmd.ReadPaths = append(cmd.ReadPaths, ops[:len(ops)-1]...)
			}
		}
	case name == "touch" || name == "mkdir" || name == "tee":
		cmd.WritePaths = append(cmd.WritePaths, operands(args)...)
	case name == "truncate":
		ops := operands(args)
		cmd.WritePaths = append(cmd.WritePaths, ops...)
		markDestructive(cmd, "truncate", "files "+strings.Join(ops, ", "), "restore the files from version control or a backup")
	case name == "chmod" || name == "chown" || name == "chgrp":
		ops := operands(args)
		if len(ops) > 1 {
			cmd.WritePaths = append(cmd.WritePaths, ops[1:]...)
		}
		if hasFlag(args, 'R', "--recursive") {
			markDestructive(cmd, "recursive permission change", "files under "+strings.Join(ops[min(1, len(ops)):], ", "),
				"reapply the previous modes or owners from a backup listing")
		}
	case name == "dd":
		for _, a := range args {
			if of, ok := strings.CutPrefix(a, "of="); ok {
				cmd.WritePaths = append(cmd.WritePaths, of)
				markDestructive(cmd, "raw overwrite", of, "restore "+of+" from a backup")
			}
			if in, ok := strings.CutPrefix(a, "if="); ok {
				cmd.ReadPaths = append(cmd.ReadPaths, in)
			}
		}
	case strings.HasPrefix(name, "mkfs") || name == "fdisk" || name == "wipefs":
		markDestructive(cmd, "filesystem format", strings.Join(operands(args), ", "), "none: formatting destroys the filesystem; restore from a backup")
	case name == "find":
		for i, a := range args {
			if a == "-delete" || (a == "-exec" || a == "-execdir") && i+1 < len(args) && path.Base(args[i+1]) == "rm" {
				markDestructive(cmd, "delete by find", "files matched under "+strings.Join(operands(args[:1]), ", "),
					"restore the files from version control or a backup")
			}
		}
		if !cmd.Destructive && !containsAny(args, "-exec", "-execdir", "-ok", "-fprint", "-fprintf", "-fls") {
			cmd.ReadOnly = true
		}
	case name == "git":
		classifyGit(cmd, args)
	case name == "sed" && (hasFlag(args, 'i', "--in-place") || hasPrefixArg(args, "-i")):
		ops := operands(args)
		if len(ops) > 1 {
			cmd.WritePaths = append(cmd.WritePaths, ops[1:]...)
		}
	case networkCommands[name]:
		cmd.Network = true
		cmd.Hosts = append(cmd.Hosts, hostsOf(args)...)
		if name == "curl" || name == "wget" {
			for i, a := range args {
				if (a == "-o" || a == "--output" || a == "-O" && name == "wget") && i+1 < len(args) {
					cmd.WritePaths = append(cmd.WritePaths, args[i+1])
				}
			}
		}
	case readOnlyCommands[name]:
		cmd.ReadOnly = true
		if name == "cat" || name == "head" || name == "tail" || name == "less" || name == "more" || name == "wc" || name == "stat" || name == "file" {
			cmd.ReadPaths = append(cmd.ReadPaths, operands(args)...)
		}
	}
	if len(cmd.WritePaths) > 0 {
		cmd.ReadOnly = false
	}
	return nested, nil
}

func classifyGit(cmd *Command, args []string) {
	// Skip global options (-C dir, -c k=v, --no-pager...).
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if (args[i] == "-C" || args[i] == "-c") && i+1 < len(args) {
			i++
		}
		i++
	}
	if i >= len(args) {
		return
	}
	sub, rest := args[i], args[i+1:]
	switch sub {
	case "push":
		cmd.Network = true
		cmd.Hosts = append(cmd.Hosts, hostsOf(rest)...)
		force := hasFlag(rest, 'f', "--force") || containsPrefix(rest, "--force-with-lease") || containsPrefix(rest, "--force-if-includes")
		for _, r := range operands(rest) {
			if strings.HasPrefix(r, "+") {
				force = true
			}
		}
		if force {
			ops := operands(rest)
			markDestructive(cmd, "force push", "remote branch "+strings.Join(ops, " "),
				"push the previous commit back (find it with git reflog on a clone that has it)")
		} else if containsAny(rest, "--delete", "-d") {
			markDestructive(cmd, "remote branch delete", "remote "+strings.Join(operands(rest), " "),
				"push the branch again from a clone that has it")
		}
	case "fetch", "pull", "clone", "ls-remote":
		cmd.Network = true
		cmd.Hosts = append(cmd.Hosts, hostsOf(rest)...)
		if sub == "pull" {
			return
		}
	case "reset":
		if containsAny(rest, "--hard", "--merge", "--keep") {
			markDestructive(cmd, "hard reset", "working tree and index",
				"git reflog shows the previous HEAD; uncommitted changes are lost")
		}
	case "clean":
		if hasFlag(rest, 'f', "--force") {
			markDestructive(cmd, "delete untracked files", "untracked files of the working tree",
				"none from git: untracked files were never committed; restore from a backup")
		}
	case "checkout", "restore":
		if containsAny(rest, "--", ".", "--force", "-f") || sub == "restore" {
			markDestructive(cmd, "discard changes", "uncommitted changes of the named paths",
				"none from git: discarded changes were never committed")
		}
	case "branch":
		if hasFlag(rest, 'D', "") || containsAny(rest, "--delete") && containsAny(rest, "--force") {
			markDestructive(cmd, "force branch delete", "branch "+strings.Join(operands(rest), " "),
				"git reflog shows the branch's last commit; recreate it with git branch <name> <commit>")
		}
		if len(operands(rest)) == 0 {
			cmd.ReadOnly = true
		}
	case "stash":
		if containsAny(rest, "drop", "clear") {
			markDestructive(cmd, "stash drop", "stashed changes", "git fsck --unreachable can find dropped stashes until they are pruned")
		}
	default:
		if readOnlyGit[sub] {
			cmd.ReadOnly = true
		}
	}
}

// effectiveArgv strips wrappers and leading VAR=value assignments.
func effectiveArgv(argv []string) []string {
	for len(argv) > 0 {
		if isAssignment(argv[0]) {
			argv = argv[1:]
			continue
		}
		name := path.Base(argv[0])
		if !wrappers[name] || len(argv) == 1 {
			return argv
		}
		rest := argv[1:]
		for len(rest) > 0 && (strings.HasPrefix(rest[0], "-") || isAssignment(rest[0])) {
			opt := rest[0]
			rest = rest[1:]
			// Options of sudo and timeout that take a value.
			if (name == "sudo" && (opt == "-u" || opt == "-g" || opt == "-C")) || (name == "timeout" && (opt == "-s" || opt == "-k")) || (name == "nice" && opt == "-n") {
				if len(rest) > 0 {
					rest = rest[1:]
				}
			}
		}
		if name == "timeout" && len(rest) > 0 {
			rest = rest[1:] // the duration
		}
		argv = rest
	}
	return argv
}

func isAssignment(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return false
	}
	for i, c := range s[:eq] {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// operands are the arguments that are not options; after "--" everything
// is an operand.
func operands(args []string) []string {
	var out []string
	dashdash := false
	for _, a := range args {
		switch {
		case dashdash:
			out = append(out, a)
		case a == "--":
			dashdash = true
		case strings.HasPrefix(a, "-") && a != "-":
		default:
			out = append(out, a)
		}
	}
	return out
}

// hasFlag reports a short flag (alone or combined, "-rf") or a long one.
func hasFlag(args []string, short byte, long string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if long != "" && a == long {
			return true
		}
		if short != 0 && len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], short) >= 0 {
			return true
		}
	}
	return false
}

func hasPrefixArg(args []string, prefix string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

func containsAny(args []string, values ...string) bool {
	for _, a := range args {
		for _, v := range values {
			if a == v {
				return true
			}
		}
	}
	return false
}

func containsPrefix(args []string, prefix string) bool { return hasPrefixArg(args, prefix) }

// hostsOf extracts hosts from URL and user@host:path arguments.
func hostsOf(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if strings.Contains(a, "://") {
			if u, err := url.Parse(a); err == nil && u.Hostname() != "" {
				out = append(out, strings.ToLower(u.Hostname()))
			}
			continue
		}
		// scp-like "user@host:path" or "host:path".
		if at := strings.IndexByte(a, '@'); at >= 0 {
			h := a[at+1:]
			if c := strings.IndexByte(h, ':'); c >= 0 {
				h = h[:c]
			}
			if h != "" {
				out = append(out, strings.ToLower(h))
			}
		}
	}
	return out
}
