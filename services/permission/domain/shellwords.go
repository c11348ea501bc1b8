// Words of a parsed command: their literal values, redirections, the
// wrappers and shells a command runs through, and option helpers.

package domain

import (
	"bytes"
	"net/url"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// varSetters are builtins that assign shell variables by name.
var varSetters = map[string]bool{
	"read": true, "mapfile": true, "readarray": true, "getopts": true, "printf": true, "export": true,
	"declare": true, "typeset": true, "local": true, "readonly": true, "let": true, "set": true,
	"eval": true, "source": true, ".": true, "unset": true, "shopt": true, "alias": true,
}

// explicitlyRelative: a cd operand $CDPATH does not apply to.
func explicitlyRelative(dir string) bool {
	return strings.HasPrefix(dir, "/") || dir == "." || dir == ".." || strings.HasPrefix(dir, "./") || strings.HasPrefix(dir, "../")
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

// wrappers run their arguments as a command, which is judged in their
// place; opaque ones (sudo, xargs...) make it never read-only.
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "env": true, "nice": true, "nohup": true, "time": true,
	"command": true, "exec": true, "xargs": true, "timeout": true, "stdbuf": true, "ionice": true,
}

// opaqueWrappers change who runs the command or where its arguments come
// from (xargs reads them from stdin): what they run is never read-only.
var opaqueWrappers = map[string]bool{"sudo": true, "doas": true, "xargs": true, "stdbuf": true, "ionice": true, "exec": true}

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "busybox": false}

var networkCommands = map[string]bool{
	"curl": true, "wget": true, "ssh": true, "scp": true, "rsync": true, "nc": true, "ftp": true,
	"sftp": true, "telnet": true, "ping": true,
}

// unwrapped is a command with its wrappers taken off.
type unwrapped struct {
	argv []string
	lit  []bool
	// env: variables the wrappers set (env FOO=1).
	env []string
	// opaque: a wrapper hides what runs (sudo, xargs, an unknown option).
	opaque bool
	// split: the string of env -S, run as a command line.
	split    string
	splitLit bool
}

// unwrap strips wrappers and their options.
func unwrap(argv []string, lit []bool) unwrapped {
	u := unwrapped{argv: argv, lit: lit}
	if len(u.lit) != len(u.argv) {
		u.lit = make([]bool, len(argv))
		for i, a := range argv {
			u.lit[i] = !strings.ContainsAny(a, "$`")
		}
	}
	for len(u.argv) > 0 {
		if isAssignment(u.argv[0]) {
			u.env = append(u.env, u.argv[0][:strings.IndexByte(u.argv[0], '=')])
			u.argv, u.lit = u.argv[1:], u.lit[1:]
			continue
		}
		name := path.Base(u.argv[0])
		if !wrappers[name] || len(u.argv) == 1 || !u.lit[0] {
			return u
		}
		if opaqueWrappers[name] {
			u.opaque = true
		}
		i := 1
		for i < len(u.argv) && (strings.HasPrefix(u.argv[i], "-") && u.argv[i] != "-" || name == "env" && isAssignment(u.argv[i])) {
			opt := u.argv[i]
			i++
			if opt == "--" {
				break
			}
			switch {
			case name == "env" && isAssignment(opt):
				u.env = append(u.env, opt[:strings.IndexByte(opt, '=')])
			case name == "env" && (opt == "-i" || opt == "--ignore-environment" || opt == "-0" || opt == "--null" || strings.HasPrefix(opt, "--unset=")):
			case name == "env" && (opt == "-u" || opt == "--unset"):
				i++
			case name == "env" && (opt == "-S" || opt == "--split-string" || strings.HasPrefix(opt, "-S") || strings.HasPrefix(opt, "--split-string=")):
				// env -S 'cmd args': the string is a command line.
				u.opaque = true
				s, ok := strings.CutPrefix(strings.TrimPrefix(opt, "--split-string="), "-S")
				if opt == "-S" || opt == "--split-string" {
					if i < len(u.argv) {
						s, ok = u.argv[i], u.lit[i]
						i++
					}
				} else if strings.HasPrefix(opt, "--split-string=") {
					s, ok = strings.TrimPrefix(opt, "--split-string="), u.lit[i-1]
				} else {
					ok = ok && u.lit[i-1]
				}
				u.split, u.splitLit = strings.Join(append([]string{s}, u.argv[i:]...), " "), ok
				u.argv, u.lit = nil, nil
				return u
			case name == "sudo" && (opt == "-u" || opt == "-g" || opt == "-C" || opt == "-D" || opt == "-h" || opt == "-p" || opt == "-r" || opt == "-t" || opt == "-U"),
				name == "timeout" && (opt == "-s" || opt == "-k" || opt == "--signal" || opt == "--kill-after"),
				name == "nice" && opt == "-n", name == "ionice" && (opt == "-c" || opt == "-n" || opt == "-p"),
				name == "xargs" && (opt == "-a" || opt == "-d" || opt == "-E" || opt == "-I" || opt == "-L" || opt == "-n" || opt == "-P" || opt == "-s"):
				i++
			case name == "nice" && isNumericOpt(opt), name == "timeout" && (opt == "--preserve-status" || opt == "--foreground" || opt == "-v" || opt == "--verbose" || strings.HasPrefix(opt, "--signal=") || strings.HasPrefix(opt, "--kill-after=")),
				name == "time" && opt == "-p", name == "command" && opt == "-p":
			default:
				// An option not known to leave the command as it is
				// (env -C dir, command -v...).
				u.opaque = true
			}
		}
		if name == "timeout" && i < len(u.argv) {
			i++ // the duration
		}
		i = min(i, len(u.argv))
		u.argv, u.lit = u.argv[i:], u.lit[i:]
	}
	return u
}

// effectiveArgv strips wrappers and leading VAR=value assignments.
func effectiveArgv(argv []string) []string { return unwrap(argv, nil).argv }

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
