package domain

import (
	"errors"
	"fmt"
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
	// Env names the variables the command is given: its prefix
	// assignments (FOO=1 cmd) and those of env (env FOO=1 cmd).
	Env []string
	// WritePaths and ReadPaths are raw (not normalized) targets: redirect
	// targets, operands of commands known to read, and the paths of
	// options known to write (sort -o). A path only the shell can expand
	// is kept in its source form.
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
	// ReadOnly: every word of the command is on the read-only allowlist
	// (readonly.go): a known command, each option known to only read, no
	// environment that changes what it runs. Anything else is not.
	ReadOnly bool
	// Unbounded: the command runs code the parser cannot see (sh -c "$X",
	// eval $X), so its effects cannot be bounded.
	Unbounded bool
	// Cwd says what the command does to the working directory of the
	// commands after it.
	Cwd CwdEffect

	// lit says, per word of Argv, whether it is literal.
	lit []bool
	// chain is the index of the top-level statement the command is part
	// of: a cd moves the cwd only inside its own chain.
	chain int
}

// CwdEffect is what a command does to the working directory of the
// commands after it.
type CwdEffect int

const (
	// CwdKept: the command does not change it.
	CwdKept CwdEffect = iota
	// CwdMoved: a literal `cd dir` whose success the following commands of
	// its && chain depend on; they run in dir.
	CwdMoved
	// CwdUnknown: the command may change it in a way the parser cannot
	// follow (cd in a subshell or after ||, pushd, source, cd $X...).
	CwdUnknown
)

// ParseCommand splits a command line into its simple commands: every
// command of pipelines, lists (&&, ||, ;), subshells, blocks, command and
// process substitutions, and the strings given to `sh -c` and `eval`, so
// that each is judged on its own. Wrappers (sudo, env, nice, xargs, ...)
// are looked through: `sudo rm -rf /` is judged as `rm -rf /`.
func ParseCommand(line string) ([]Command, error) {
	return parseCommand(line, 0, 0)
}

func parseCommand(line string, depth, chain int) ([]Command, error) {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnparsableCommand, err)
	}
	// Statements of a top-level && chain: a literal cd there moves the
	// cwd of the rest of its chain (which runs only if the cd succeeded).
	inChain := map[*syntax.Stmt]bool{}
	if depth == 0 {
		var mark func(*syntax.Stmt)
		mark = func(st *syntax.Stmt) {
			if st.Background || st.Negated || st.Coprocess {
				return
			}
			if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && b.Op == syntax.AndStmt {
				mark(b.X)
				mark(b.Y)
				return
			}
			inChain[st] = true
		}
		for _, st := range file.Stmts {
			mark(st)
		}
	}
	// A relative cd searches $CDPATH: when the line sets variables, a
	// relative cd is not followed.
	setsVars := false
	syntax.Walk(file, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.Assign, *syntax.DeclClause, *syntax.LetClause:
			setsVars = true
		case *syntax.WordIter:
			setsVars = true
		case *syntax.CallExpr:
			if len(x.Args) > 0 {
				if v, _ := wordValue(x.Args[0]); varSetters[v] {
					setsVars = true
				}
			}
		}
		return !setsVars
	})
	var out []Command
	var walkErr error
	for i, top := range file.Stmts {
		if depth == 0 {
			chain = i
		}
		syntax.Walk(top, func(n syntax.Node) bool {
			if walkErr != nil {
				return false
			}
			switch x := n.(type) {
			case *syntax.WordIter:
				// `for PATH in ...` assigns a variable, maybe an exported one.
				out = append(out, Command{Argv: []string{"for", x.Name.Value}, chain: chain})
				return true
			case *syntax.Stmt:
			default:
				return true
			}
			st := n.(*syntax.Stmt)
			cmd := Command{chain: chain}
			switch c := st.Cmd.(type) {
			case *syntax.CallExpr:
				for _, a := range c.Assigns {
					if a.Name != nil {
						cmd.Env = append(cmd.Env, a.Name.Value)
					}
					if a.Value != nil {
						if v, lit := wordValue(a.Value); !lit || strings.Contains(v, "/") {
							// A locale or zone that is a path loads files.
							cmd.Env = append(cmd.Env, "")
						}
					}
				}
				for _, w := range c.Args {
					v, lit := wordValue(w)
					if !lit {
						cmd.Dynamic = true
					}
					cmd.Argv = append(cmd.Argv, v)
					cmd.lit = append(cmd.lit, lit)
				}
				if len(c.Args) == 0 {
					// A bare assignment changes the shell's variables (PATH,
					// an exported one): never read-only.
					cmd.Env = nil
				}
			case *syntax.DeclClause:
				// export, declare, local, readonly: they set variables the
				// commands after them see. Judged as a command that is not
				// read-only.
				cmd.Argv = []string{c.Variant.Value}
				for _, a := range c.Args {
					cmd.Argv = append(cmd.Argv, source(a))
				}
			case *syntax.LetClause:
				cmd.Argv = []string{"let"}
			case nil:
			case *syntax.Block, *syntax.Subshell, *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause,
				*syntax.CaseClause, *syntax.BinaryCmd, *syntax.FuncDecl, *syntax.TestClause, *syntax.ArithmCmd,
				*syntax.TimeClause, *syntax.CoprocClause:
				if len(st.Redirs) == 0 {
					// Compound commands are judged through the statements
					// inside them, which Walk visits.
					return true
				}
			default:
				// Anything else (a test declaration...) is not understood,
				// hence not read-only.
				cmd.Argv = []string{source(st.Cmd)}
				cmd.Dynamic = true
			}
			for _, r := range st.Redirs {
				applyRedirect(&cmd, r)
			}
			nested, err := classify(&cmd, depth, chain)
			if err != nil {
				walkErr = err
				return false
			}
			if cmd.Cwd == CwdMoved && (!inChain[st] || setsVars && !explicitlyRelative(cmd.Argv[len(cmd.Argv)-1])) {
				cmd.Cwd = CwdUnknown
			}
			out = append(out, cmd)
			out = append(out, nested...)
			return true
		})
	}
	if walkErr != nil {
		return nil, walkErr
	}
	return out, nil
}

func markDestructive(cmd *Command, reason, impact, rollback string) {
	if cmd.Destructive {
		return
	}
	cmd.Destructive, cmd.DestructiveReason, cmd.ImpactScope, cmd.RollbackAdvice = true, reason, impact, rollback
}

// classify fills in what a command does from its argv, and returns the
// commands nested in it (the string of `sh -c`, `eval`, `env -S`).
func classify(cmd *Command, depth, chain int) ([]Command, error) {
	u := unwrap(cmd.Argv, cmd.lit)
	cmd.Env = append(cmd.Env, u.env...)
	var nested []Command
	parseNested := func(script string, lit bool) error {
		if !lit {
			cmd.Unbounded = true
			return nil
		}
		if depth >= maxNesting {
			return fmt.Errorf("%w: shell strings nested deeper than %d", ErrUnparsableCommand, maxNesting)
		}
		inner, err := parseCommand(script, depth+1, chain)
		if err != nil {
			return err
		}
		nested = append(nested, inner...)
		return nil
	}
	if u.split != "" {
		if err := parseNested(u.split, u.splitLit); err != nil {
			return nil, err
		}
	}
	argv := u.argv
	if len(argv) == 0 {
		return nested, nil
	}
	name := path.Base(argv[0])
	args := argv[1:]
	switch {
	case name == "eval" || name == "watch":
		// eval runs its arguments joined; watch runs them with sh -c.
		i := 1
		if name == "watch" {
			for i < len(argv) && strings.HasPrefix(argv[i], "-") {
				if argv[i] == "-n" || argv[i] == "--interval" || argv[i] == "-q" || argv[i] == "--equexit" {
					i++
				}
				i++
			}
		}
		allLit := true
		for _, l := range u.lit[min(i, len(u.lit)):] {
			allLit = allLit && l
		}
		if i < len(argv) {
			if err := parseNested(strings.Join(argv[i:], " "), allLit); err != nil {
				return nil, err
			}
		}
	case name == "trap":
		// trap's action runs later, in this shell.
		if ops := operands(args); len(ops) > 1 && ops[0] != "-" && ops[0] != "" {
			lit := true
			for i, a := range args {
				if a == ops[0] {
					lit = u.lit[i+1]
					break
				}
			}
			if err := parseNested(ops[0], lit); err != nil {
				return nil, err
			}
		}
	case shells[name]:
		if script, lit, ok := shellScript(args, u.lit[1:]); ok {
			if err := parseNested(script, lit); err != nil {
				return nil, err
			}
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
			if (a == "-fprint" || a == "-fprint0" || a == "-fprintf" || a == "-fls") && i+1 < len(args) {
				cmd.WritePaths = append(cmd.WritePaths, args[i+1])
			}
		}
		// What -exec, -execdir, -ok and -okdir run is judged as a command
		// of its own, once per start point standing for {}.
		starts := findStartPoints(args)
		if (containsAny(args, "-exec", "-execdir", "-ok", "-okdir")) && (len(starts) > 16 || depth >= maxNesting) {
			// Too many to judge one by one: what it runs is not bounded.
			cmd.Unbounded = true
			starts = nil
		}
		for i := 0; i < len(args); i++ {
			if a := args[i]; a != "-exec" && a != "-execdir" && a != "-ok" && a != "-okdir" {
				continue
			}
			end := i + 1
			for end < len(args) && args[end] != ";" && args[end] != "+" {
				end++
			}
			for _, start := range starts {
				inner := Command{chain: chain}
				for j := i + 1; j < end; j++ {
					inner.Argv = append(inner.Argv, strings.ReplaceAll(args[j], "{}", start))
					inner.lit = append(inner.lit, u.lit[j+1])
					inner.Dynamic = inner.Dynamic || !u.lit[j+1]
				}
				more, err := classify(&inner, depth+1, chain)
				if err != nil {
					return nil, err
				}
				if inner.Cwd != CwdKept {
					inner.Cwd = CwdUnknown
				}
				nested = append(append(nested, inner), more...)
			}
			i = end
		}
	case name == "git":
		classifyGit(cmd, args)
	case name == "sed" && (hasFlag(args, 'i', "--in-place") || hasPrefixArg(args, "-i") || hasPrefixArg(args, "--in-place")):
		ops := operands(args)
		if len(ops) > 1 {
			cmd.WritePaths = append(cmd.WritePaths, ops[1:]...)
		}
	case name == "sort":
		for i, a := range args {
			if (a == "-o" || a == "--output") && i+1 < len(args) {
				cmd.WritePaths = append(cmd.WritePaths, args[i+1])
			} else if o, ok := strings.CutPrefix(a, "--output="); ok {
				cmd.WritePaths = append(cmd.WritePaths, o)
			} else if o, ok := strings.CutPrefix(a, "-o"); ok && o != "" {
				cmd.WritePaths = append(cmd.WritePaths, o)
			}
		}
	case name == "cd" || name == "pushd" || name == "popd" || name == "builtin" || name == "source" || name == ".":
		cmd.Cwd = CwdUnknown
		if name == "cd" && len(args) == 1 && u.lit[1] && args[0] != "-" {
			cmd.Cwd = CwdMoved
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
	}
	// Read-only only when nothing says otherwise: a known command with
	// only known options, run by its name from the system's directories,
	// without environment that changes what it runs.
	reads, ro := readOnlyCommand(name, args, u.lit[1:])
	if ro && !u.opaque && envIsInert(cmd.Env) && plainProgram(argv[0], u.lit[0]) &&
		len(cmd.WritePaths) == 0 && !cmd.Network && !cmd.Destructive && !cmd.Unbounded && len(nested) == 0 {
		cmd.ReadOnly = true
	}
	if ro {
		cmd.ReadPaths = append(cmd.ReadPaths, reads...)
	}
	return nested, nil
}

// findStartPoints are find's operands before its expression ("." when
// none).
func findStartPoints(args []string) []string {
	i := 0
	for i < len(args) && (args[i] == "-H" || args[i] == "-P" || args[i] == "-L") {
		i++
	}
	var out []string
	for ; i < len(args) && !strings.HasPrefix(args[i], "-") && args[i] != "(" && args[i] != "!"; i++ {
		out = append(out, args[i])
	}
	if len(out) == 0 {
		out = []string{"."}
	}
	return out
}

// shellScript finds the command string of `sh -c script`, also in a
// combined flag group (-lc, -ec, -xc): the first operand after the options.
func shellScript(args []string, lit []bool) (script string, literal, ok bool) {
	hasC := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			i++
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
			continue
		case strings.HasPrefix(a, "--"):
			continue
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			if strings.IndexByte(a[1:], 'c') >= 0 {
				hasC = true
			}
			continue
		}
		if i < len(args) && hasC {
			return args[i], lit[i], true
		}
		return "", false, false
	}
	return "", false, false
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
	case "stash":
		if containsAny(rest, "drop", "clear") {
			markDestructive(cmd, "stash drop", "stashed changes", "git fsck --unreachable can find dropped stashes until they are pruned")
		}
	}
}
