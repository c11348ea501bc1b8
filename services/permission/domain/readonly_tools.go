// The read-only forms of commands that take scripts or expressions (find,
// jq, sed), and the environment a read-only command may be given.

package domain

import (
	"strings"
)

// findExpr: find's expression words that only read, with how many words
// of value each takes; -newer and the like read the file they name.
var findExpr = map[string]int{
	"-print": 0, "-print0": 0, "-prune": 0, "-empty": 0, "-depth": 0, "-xdev": 0, "-mount": 0, "-readable": 0,
	"-writable": 0, "-executable": 0, "-quit": 0, "-true": 0, "-false": 0, "-nouser": 0, "-nogroup": 0, "-ls": 0,
	"-daystart": 0, "-noleaf": 0, "-o": 0, "-or": 0, "-a": 0, "-and": 0, "-not": 0, "!": 0, "(": 0, ")": 0, ",": 0,
	"-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1, "-iregex": 1,
	"-type": 1, "-xtype": 1, "-maxdepth": 1, "-mindepth": 1, "-mtime": 1, "-mmin": 1, "-atime": 1, "-amin": 1,
	"-ctime": 1, "-cmin": 1, "-size": 1, "-perm": 1, "-user": 1, "-group": 1, "-uid": 1, "-gid": 1, "-links": 1,
	"-inum": 1, "-lname": 1, "-ilname": 1, "-printf": 1, "-regextype": 1, "-used": 1, "-fstype": 1,
	"-newer": 1, "-anewer": 1, "-cnewer": 1, "-samefile": 1,
}

// readOnlyFind: start points are read; not -exec, -execdir, -ok, -okdir,
// -delete, -fprint, -fprint0, -fprintf, -fls, nor -L/-follow (follow links
// out of the start points).
func readOnlyFind(args []string) ([]string, bool) {
	i := 0
	for i < len(args) && (args[i] == "-H" || args[i] == "-P") {
		i++
	}
	var reads []string
	for i < len(args) && !strings.HasPrefix(args[i], "-") && args[i] != "(" && args[i] != "!" {
		reads = append(reads, args[i])
		i++
	}
	if len(reads) == 0 {
		reads = []string{"."}
	}
	for ; i < len(args); i++ {
		n, ok := findExpr[args[i]]
		if !ok && strings.HasPrefix(args[i], "-newer") && len(args[i]) == len("-newerXY") {
			n, ok = 1, true
		}
		if !ok || n > 0 && i+n >= len(args) {
			return nil, false
		}
		if args[i] == "-newer" || args[i] == "-anewer" || args[i] == "-cnewer" || args[i] == "-samefile" {
			reads = append(reads, args[i+1])
		}
		i += n
	}
	return reads, true
}

var jqLong = set(`raw-output join-output compact-output null-input slurp exit-status sort-keys color-output
	monochrome-output ascii-output raw-input tab seq stream stream-errors raw-output0`)

// readOnlyJq: the first operand is the filter, the rest are files read;
// --slurpfile and --rawfile read theirs; after --args or --jsonargs
// operands are values. Not -L (loads modules from a directory), -f (a
// filter from a file), nor a filter that imports or includes.
func readOnlyJq(args []string, lit []bool) ([]string, bool) {
	var reads []string
	filter := false
	values := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--args" || a == "--jsonargs":
			values = true
		case a == "--arg" || a == "--argjson":
			i += 2
		case a == "--slurpfile" || a == "--rawfile":
			if i+2 >= len(args) {
				return nil, false
			}
			reads = append(reads, args[i+2])
			i += 2
		case a == "-f" || a == "--from-file":
			return nil, false // a filter not seen here may import modules
		case a == "--indent":
			i++
		case strings.HasPrefix(a, "--"):
			if !jqLong[a[2:]] && a != "--" {
				return nil, false
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, c := range a[1:] {
				if !strings.ContainsRune("rjcnseSCMaR", c) {
					return nil, false
				}
			}
		case !filter:
			// import and include read modules and data files by name.
			if i < len(lit) && !lit[i] || strings.Contains(a, "import") || strings.Contains(a, "include") {
				return nil, false
			}
			filter = true
		case !values:
			if i < len(lit) && !lit[i] && (strings.HasPrefix(a, "<(") || strings.HasPrefix(a, ">(")) {
				continue
			}
			reads = append(reads, a)
		}
	}
	return reads, true
}

// readOnlySed: sed without -i, whose scripts have no command that writes
// or runs (w, W, e, the w and e flags of s) or reads another file (r, R).
func readOnlySed(args []string, lit []bool) ([]string, bool) {
	var scripts []string
	var reads []string
	scriptGiven := false
	var files []int
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-e" || a == "--expression":
			if i+1 >= len(args) || !lit[i+1] {
				return nil, false
			}
			scripts = append(scripts, args[i+1])
			scriptGiven = true
			i++
		case strings.HasPrefix(a, "--expression="):
			scripts = append(scripts, strings.TrimPrefix(a, "--expression="))
			scriptGiven = true
		case a == "--quiet" || a == "--silent" || a == "--regexp-extended" || a == "--separate" || a == "--unbuffered" ||
			a == "--null-data" || a == "--posix" || a == "--debug" || a == "--sandbox":
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Trim(a[1:], "nErsuz") == "":
		case a == "-" || !strings.HasPrefix(a, "-"):
			files = append(files, i)
		default:
			return nil, false
		}
	}
	if !scriptGiven {
		if len(files) == 0 || !lit[files[0]] {
			return nil, false
		}
		scripts = append(scripts, args[files[0]])
		files = files[1:]
	}
	for _, s := range scripts {
		if !sedScriptSafe(s) {
			return nil, false
		}
	}
	for _, i := range files {
		if args[i] != "-" {
			reads = append(reads, args[i])
		}
	}
	return reads, true
}

// sedScriptSafe scans a sed script: addresses, then commands that only
// print or edit the pattern space.
func sedScriptSafe(s string) bool {
	i := 0
	skipDelimited := func(delim byte) bool {
		for i < len(s) {
			c := s[i]
			i++
			if c == '\\' {
				i++
				continue
			}
			if c == delim {
				return true
			}
		}
		return false
	}
	// skipRegex is skipDelimited for a regular expression, where sed
	// implementations differ on whether a delimiter inside a bracket
	// expression ends it ([/] in s/[/]/x/w f): only a simple bracket
	// without the delimiter, a backslash or a nested [ is accepted, on
	// which they agree.
	skipRegex := func(delim byte) bool {
		for i < len(s) {
			c := s[i]
			i++
			switch c {
			case '\\':
				i++
			case delim:
				return true
			case '[':
				if i < len(s) && s[i] == '^' {
					i++
				}
				if i < len(s) && s[i] == ']' {
					i++
				}
				for {
					if i >= len(s) || s[i] == delim || s[i] == '\\' || s[i] == '[' || s[i] == '\n' {
						return false
					}
					i++
					if s[i-1] == ']' {
						break
					}
				}
			}
		}
		return false
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '!' || c == ',' || c == '$' || c == '~' || c == '+' ||
			c >= '0' && c <= '9' || c == '{' || c == '}':
			i++
		case c == '/':
			i++
			if !skipRegex('/') {
				return false
			}
			// An address may be followed by I or M.
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case c == '\\':
			if i+1 >= len(s) {
				return false
			}
			d := s[i+1]
			i += 2
			if !skipRegex(d) {
				return false
			}
		case c == '#' || c == ':' || c == 'b' || c == 't' || c == 'T' || c == 'a' || c == 'i' || c == 'c':
			// Comment, label, branch or text: to the end of the line; a
			// label or branch ends earlier, at white space, ';' or '}'
			// (stopping early only makes more of the script checked).
			stop := "\n"
			if c == ':' || c == 'b' || c == 't' || c == 'T' {
				i++
				for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
					i++
				}
				stop = "\n;} \t"
			}
			for i < len(s) && strings.IndexByte(stop, s[i]) < 0 {
				i++
			}
		case strings.IndexByte("pdnNPDgGhHxz=lFqQ", c) >= 0:
			i++
		case c == 's' || c == 'y':
			if i+1 >= len(s) || s[i+1] == '\\' || s[i+1] == '\n' {
				return false
			}
			d := s[i+1]
			i += 2
			if c == 's' && !skipRegex(d) || c == 'y' && !skipDelimited(d) || !skipDelimited(d) {
				return false
			}
			if c == 's' {
				for i < len(s) && strings.IndexByte(";\n} \t", s[i]) < 0 {
					if strings.IndexByte("gpiImM0123456789", s[i]) < 0 {
						return false // w file, e
					}
					i++
				}
			}
		default:
			// w, W, r, R, e, v and anything unknown.
			return false
		}
	}
	return true
}

// inertEnv may be given to a read-only command: they change how text
// looks, not what runs or what is read.
var inertEnv = set("LANG LANGUAGE LC_ALL LC_COLLATE LC_CTYPE LC_MESSAGES LC_NUMERIC LC_TIME TZ NO_COLOR")

// envIsInert: the command is given no variable beyond inertEnv (GIT_*,
// LD_PRELOAD, PAGER, PATH... change what runs). An empty name stands for a
// value that is a path or only the shell knows.
func envIsInert(names []string) bool {
	for _, n := range names {
		if !inertEnv[n] {
			return false
		}
	}
	return true
}
