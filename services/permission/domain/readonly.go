package domain

import (
	"path"
	"strings"
)

// The read-only allowlist. A shell command runs without asking (sandboxed)
// only when it is known to only read, so the list says what is known, and
// everything else is not read-only: an unknown command, an unknown option
// of a known one (it may write, run a program, follow links out...), a
// program named by a path, environment given to it. Each command's
// operands that name files are its read paths, checked against the read
// roots like any other read.

// optKind is what a long option takes.
type optKind int

const (
	noValue       optKind = iota // --name
	value                        // --name=v or --name v
	optionalValue                // --name or --name=v
)

// optSpec is the options of one command that only read.
type optSpec struct {
	// short options without a value, and those that take one (attached,
	// -n5, or the next word).
	short, valued string
	long          map[string]optKind
	// numeric accepts -5 (head, tail).
	numeric bool
	// any: the command has no option that writes or runs anything.
	any bool
	// reads names the options (short letter or long name) whose value is
	// a file the command reads.
	reads map[string]bool
	// words are whole arguments accepted as they are (git status -uno).
	words map[string]bool
}

// parsedArgs is what a command's arguments turned out to be.
type parsedArgs struct {
	// operands are indexes of the non-option arguments.
	operands []int
	seen     map[string]bool
	reads    []string
}

// parse reads args against the spec; false when an argument is not known
// to only read.
func (o optSpec) parse(args []string) (parsedArgs, bool) {
	p := parsedArgs{seen: map[string]bool{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			for j := i + 1; j < len(args); j++ {
				p.operands = append(p.operands, j)
			}
			return p, true
		case a == "-" || !strings.HasPrefix(a, "-"):
			p.operands = append(p.operands, i)
		case o.words[a]:
			p.seen[a] = true
		case o.any:
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			kind, ok := o.long[name]
			if !ok || kind == noValue && hasVal {
				return p, false
			}
			if kind == value && !hasVal {
				if i+1 >= len(args) {
					return p, false
				}
				i++
				val, hasVal = args[i], true
			}
			p.seen[name] = true
			if hasVal && o.reads[name] {
				p.reads = append(p.reads, val)
			}
		case o.numeric && isNumericOpt(a):
		default:
			for j := 1; j < len(a); j++ {
				c := a[j]
				if strings.IndexByte(o.short, c) >= 0 {
					p.seen[string(c)] = true
					continue
				}
				if strings.IndexByte(o.valued, c) < 0 {
					return p, false
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return p, false
					}
					i++
					val = args[i]
				}
				p.seen[string(c)] = true
				if o.reads[string(c)] {
					p.reads = append(p.reads, val)
				}
				break
			}
		}
	}
	return p, true
}

func isNumericOpt(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	for _, c := range a[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func longs(spec string) map[string]optKind {
	m := map[string]optKind{}
	for _, f := range strings.Fields(spec) {
		switch {
		case strings.HasSuffix(f, "[=]"):
			m[strings.TrimSuffix(f, "[=]")] = optionalValue
		case strings.HasSuffix(f, "="):
			m[strings.TrimSuffix(f, "=")] = value
		default:
			m[f] = noValue
		}
	}
	return m
}

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// operandKind says what a command's operands are.
type operandKind int

const (
	// operandPaths: every operand is a file or directory read.
	operandPaths operandKind = iota
	// operandText: operands are not paths (echo, tr).
	operandText
	// patternThenPaths: the first operand is a pattern unless an option
	// gave one (grep, rg); the rest are paths.
	patternThenPaths
)

// roCommand is one command of the allowlist.
type roCommand struct {
	opts     optSpec
	operands operandKind
	// implicitDot: without a path operand the command reads its cwd
	// (ls, find, rg).
	implicitDot bool
	// maxOperands: more operands are not read-only (uniq's second is its
	// output); 0: no limit.
	maxOperands int
	// patternOpts name the options that give the pattern instead of the
	// first operand.
	patternOpts map[string]bool
}

var grepLong = longs(`recursive ignore-case no-ignore-case line-number files-with-matches files-without-match count invert-match
	word-regexp line-regexp extended-regexp fixed-strings basic-regexp perl-regexp only-matching quiet silent no-messages
	no-filename with-filename text binary-files= null null-data color[=] colour[=] include= exclude= exclude-dir=
	after-context= before-context= context= max-count= regexp= file= label= line-buffered initial-tab byte-offset devices=`)

var rgLong = longs(`files hidden no-hidden no-ignore no-ignore-vcs no-ignore-parent no-ignore-dot no-ignore-global no-ignore-exclude
	no-ignore-files glob= iglob= type= type-not= type-list json no-heading heading color= colors= line-number no-line-number
	ignore-case smart-case case-sensitive fixed-strings count count-matches files-with-matches files-without-match
	max-count= max-depth= maxdepth= sort= sortr= trim vimgrep column no-column no-messages with-filename no-filename null
	threads= context= after-context= before-context= word-regexp line-regexp invert-match only-matching multiline
	multiline-dotall pcre2 engine= replace= stats text binary unrestricted max-columns= max-columns-preview max-filesize=
	passthru quiet regexp= file= encoding= no-config crlf byte-offset field-match-separator= field-context-separator=
	path-separator= one-file-system context-separator= no-context-separator include-zero no-unicode`)

// Options of git log, show, diff and the like that only read: not
// --output (writes a file), --ext-diff and --textconv (run programs),
// --show-signature (runs gpg), --no-index (compares any two paths).
var gitLogLong = longs(`oneline graph decorate[=] no-decorate stat[=] shortstat numstat name-only name-status patch no-patch raw
	format= pretty[=] abbrev-commit no-abbrev-commit abbrev[=] all branches[=] tags[=] remotes[=] author= committer= since=
	until= after= before= grep= reverse max-count= skip= first-parent no-merges merges follow date= relative-date color[=]
	no-color word-diff[=] word-diff-regex= color-words[=] cached staged unified= ignore-all-space ignore-space-change
	ignore-blank-lines ignore-space-at-eol find-renames[=] find-copies[=] no-renames full-index summary dirstat[=] diff-filter=
	check exit-code quiet minimal patience histogram diff-algorithm= src-prefix= dst-prefix= no-prefix relative[=] text
	merge-base topo-order date-order author-date-order left-right cherry-pick cherry-mark boundary
	simplify-by-decoration full-history ancestry-path pickaxe-all pickaxe-regex encoding= expand-tabs[=] no-expand-tabs
	log-size source use-mailmap mailmap no-mailmap invert-grep regexp-ignore-case extended-regexp fixed-strings
	perl-regexp all-match no-walk[=] do-walk ignore-submodules[=] submodule[=] no-ext-diff no-textconv count
	numbered summary email group= reflog walk-reflogs no-notes children parents show-pulls`)

var gitGrepLong = longs(`cached untracked no-index recurse-submodules max-depth= threads= break heading show-function function-context
	and or not all-match ignore-case line-number files-with-matches files-without-match count invert-match word-regexp
	extended-regexp basic-regexp fixed-strings perl-regexp only-matching quiet no-filename full-name null text column
	after-context= before-context= context= max-count= color[=] no-color`)

// roGit: git subcommands that only read, with their options.
var roGit = map[string]roCommand{
	"status": {opts: optSpec{short: "sbvz", long: longs(`short branch porcelain[=] long untracked-files[=] ignored[=]
		ignore-submodules[=] column[=] no-column ahead-behind no-ahead-behind renames no-renames show-stash verbose find-renames[=] null`),
		words: set("-u -uno -unormal -uall")}},
	"log":       {opts: optSpec{short: "pusnNzwbRMCWLt", valued: "nSGU", long: gitLogLong, numeric: true}},
	"show":      {opts: optSpec{short: "pusnNzwbRMCWt", valued: "nSGU", long: gitLogLong, numeric: true}},
	"diff":      {opts: optSpec{short: "pusnNzwbRMCWta", valued: "SGU", long: gitLogLong}},
	"shortlog":  {opts: optSpec{short: "nsec", long: gitLogLong}},
	"rev-list":  {opts: optSpec{short: "n", valued: "n", long: gitLogLong, numeric: true}},
	"rev-parse": {opts: optSpec{any: true}},
	"blame": {opts: optSpec{short: "lstwefnpcb", valued: "L", long: longs(`porcelain line-porcelain incremental date= show-name
		show-number show-email root reverse= abbrev= color-lines color-by-age`)}},
	"ls-files": {opts: optSpec{short: "cdmosiktvzfu", long: longs(`cached deleted modified others stage ignored killed
		exclude-standard exclude= full-name error-unmatch directory no-empty-directory abbrev[=] debug eol recurse-submodules
		deduplicate format= unmerged resolve-undo sparse`)}},
	"ls-tree":    {opts: optSpec{short: "rdtlz", long: longs(`name-only name-status full-name full-tree abbrev[=] object-only format= long`)}},
	"describe":   {opts: optSpec{long: longs(`tags all long abbrev= always dirty[=] broken[=] contains exact-match match= exclude= first-parent candidates=`)}},
	"cat-file":   {opts: optSpec{short: "ptse"}},
	"merge-base": {opts: optSpec{short: "a", long: longs(`is-ancestor all octopus fork-point independent`)}},
	"show-ref":   {opts: optSpec{short: "sdq", long: longs(`heads tags branches verify hash[=] abbrev[=] dereference head exists quiet`)}},
	"grep":       {opts: optSpec{short: "ailLcvwEGFPhHznoq", valued: "ABCefm", long: gitGrepLong, reads: set("f file")}, operands: patternThenPaths, patternOpts: set("e f file")},
	"branch": {opts: optSpec{short: "arvl", long: longs(`all remotes verbose list show-current contains[=] no-contains[=] merged[=]
		no-merged[=] sort= format= color[=] no-color column[=] no-column points-at= ignore-case omit-empty`)}},
	"tag": {opts: optSpec{short: "l", long: longs(`list sort= contains[=] no-contains[=] points-at= format= merged[=]
		no-merged[=] column[=] no-column ignore-case omit-empty color[=]`)}},
	"remote":        {opts: optSpec{short: "v", long: longs("verbose")}, operands: operandText, maxOperands: -1},
	"count-objects": {opts: optSpec{short: "vH", long: longs("verbose human-readable")}, operands: operandText, maxOperands: -1},
}

// gitGlobalOptions change nothing git runs or where it looks; any other
// (-c, --config-env, -C, --git-dir, --work-tree, --exec-path, -p...) is
// not read-only.
var gitGlobalOptions = set(`--no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs --noglob-pathspecs
	--icase-pathspecs --no-replace-objects --no-lazy-fetch`)

// roCommands is the allowlist of commands that only read.
var roCommands = map[string]roCommand{
	"ls": {opts: optSpec{short: "1aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ", valued: "IwT", long: longs(`all almost-all color[=] colour[=]
		classify[=] directory human-readable inode recursive reverse size sort= time= time-style= format= group-directories-first
		si full-time indicator-style= ignore= hide= quoting-style= numeric-uid-gid no-group literal escape zero hyperlink[=]
		block-size= author context ignore-backups kibibytes width= tabsize= file-type dereference-command-line
		dereference-command-line-symlink-to-dir`)}, implicitDot: true},
	"cat":  {opts: optSpec{short: "AbeEnstTuv", long: longs(`number number-nonblank show-all show-ends show-tabs squeeze-blank show-nonprinting`)}},
	"head": {opts: optSpec{short: "qvz", valued: "nc", numeric: true, long: longs(`lines= bytes= quiet silent verbose zero-terminated`)}},
	"tail": {opts: optSpec{short: "fFqvz", valued: "ncs", numeric: true, long: longs(`lines= bytes= follow[=] retry quiet silent verbose
		zero-terminated sleep-interval= max-unchanged-stats= pid=`)}},
	"wc":   {opts: optSpec{short: "clmwL", long: longs(`bytes chars lines words max-line-length total=`)}},
	"stat": {opts: optSpec{short: "LfFt", valued: "c", long: longs(`dereference file-system format= printf= terse cached=`)}},
	"file": {opts: optSpec{short: "bhiLkNnr0", long: longs(`brief mime mime-type mime-encoding dereference no-dereference keep-going`)}},
	"grep": {opts: optSpec{short: "rinlLcvwxEFGPoqshHaIzTUZbuy", valued: "ABCmefD", long: grepLong, reads: set("f file")},
		operands: patternThenPaths, patternOpts: set("e f regexp file")},
	"egrep": {opts: optSpec{short: "rinlLcvwxoqshHaIzTUZbuy", valued: "ABCmefD", long: grepLong, reads: set("f file")},
		operands: patternThenPaths, patternOpts: set("e f regexp file")},
	"fgrep": {opts: optSpec{short: "rinlLcvwxoqshHaIzTUZbuy", valued: "ABCmefD", long: grepLong, reads: set("f file")},
		operands: patternThenPaths, patternOpts: set("e f regexp file")},
	// Not --pre/--pre-glob (run a program on each file), -z (runs
	// decompressors), -L/--follow (follows links out), --ignore-file.
	"rg": {opts: optSpec{short: "iSswxvlcoFUPnNHIuabpq0.", valued: "egtTABCmMdjfrE", long: rgLong, reads: set("f file")},
		operands: patternThenPaths, implicitDot: true, patternOpts: set("e f regexp file files type-list")},
	"sort": {opts: optSpec{short: "bdfgiMhnRrVcCmsuz", valued: "ktS", long: longs(`key= field-separator= ignore-leading-blanks
		dictionary-order ignore-case general-numeric-sort ignore-nonprinting month-sort human-numeric-sort numeric-sort
		random-sort reverse version-sort check[=] merge stable unique zero-terminated sort= buffer-size= parallel=`)}},
	"uniq": {opts: optSpec{short: "cdDiuz", valued: "fsw", long: longs(`count repeated all-repeated[=] ignore-case unique
		zero-terminated skip-fields= skip-chars= check-chars= group[=]`)}, maxOperands: 1},
	"cut": {opts: optSpec{short: "sz", valued: "bcfd", long: longs(`bytes= characters= fields= delimiter= complement only-delimited
		output-delimiter= zero-terminated`)}},
	"tr":   {opts: optSpec{short: "cCdst", long: longs(`complement delete squeeze-repeats truncate-set1`)}, operands: operandText},
	"comm": {opts: optSpec{short: "123iz", long: longs(`check-order nocheck-order output-delimiter= total zero-terminated`)}},
	// Not -r: diff follows the links inside the trees it compares.
	"diff": {opts: optSpec{short: "uqsyiwbBEZtTacpl", valued: "UCxWFDI", long: longs(`unified[=] context[=] brief
		report-identical-files side-by-side ignore-case ignore-all-space ignore-space-change ignore-blank-lines
		text color[=] exclude= strip-trailing-cr suppress-common-lines width= label= minimal speed-large-files
		show-c-function show-function-line= ignore-matching-lines= expand-tabs initial-tab normal no-dereference`)}},
	"du": {opts: optSpec{short: "ahcsSklmxb0", valued: "dBt", long: longs(`all human-readable summarize max-depth= total bytes
		apparent-size block-size= si one-file-system threshold= exclude= time[=] null`)}, implicitDot: true},
	"df": {opts: optSpec{short: "ahiklPT", valued: "tBx", long: longs(`all human-readable inodes local portability print-type si
		total type= exclude-type= output[=] block-size=`)}},
	// Not -o (writes a file), -R (writes HTML files), -l (follows links).
	"tree": {opts: optSpec{short: "adfispugDFrtvhACNQ", valued: "LIP", long: longs(`noreport dirsfirst charset= filelimit= gitignore
		prune du si`)}, implicitDot: true},
	"sha256sum": {opts: optSpec{short: "btz", long: longs(`binary text tag zero`)}},
	"sha1sum":   {opts: optSpec{short: "btz", long: longs(`binary text tag zero`)}},
	"md5sum":    {opts: optSpec{short: "btz", long: longs(`binary text tag zero`)}},
	"cksum":     {opts: optSpec{valued: "a", long: longs(`algorithm= tag untagged raw base64 length=`)}},
	"realpath": {opts: optSpec{short: "esmqzLP", long: longs(`canonicalize-existing canonicalize-missing logical physical quiet
		strip no-symlinks zero relative-to= relative-base=`), reads: set("relative-to relative-base")}},
	"readlink": {opts: optSpec{short: "fnemqsvz", long: longs(`canonicalize canonicalize-existing canonicalize-missing no-newline
		quiet silent verbose zero`)}},
	// cd reads nothing itself; the commands after it are judged in its dir.
	"cd":       {opts: optSpec{short: "LP"}, operands: operandText, maxOperands: 1},
	"pwd":      {opts: optSpec{short: "LP"}, operands: operandText, maxOperands: -1},
	"echo":     {opts: optSpec{any: true}, operands: operandText},
	"true":     {opts: optSpec{any: true}, operands: operandText},
	"false":    {opts: optSpec{any: true}, operands: operandText},
	"test":     {opts: optSpec{any: true}, operands: operandText},
	"[":        {opts: optSpec{any: true}, operands: operandText},
	"basename": {opts: optSpec{any: true}, operands: operandText},
	"dirname":  {opts: optSpec{any: true}, operands: operandText},
	"which":    {opts: optSpec{short: "as"}, operands: operandText},
	"whoami":   {operands: operandText, maxOperands: -1},
	"id":       {opts: optSpec{short: "ugGnrz"}, operands: operandText},
	"uname":    {opts: optSpec{short: "asnrvmpio", long: longs(`all kernel-name nodename kernel-release kernel-version machine processor hardware-platform operating-system`)}, operands: operandText, maxOperands: -1},
	"nproc":    {opts: optSpec{long: longs(`all ignore=`)}, operands: operandText, maxOperands: -1},
	"env":      {operands: operandText, maxOperands: -1},
}

// readOnlyCommand says whether name with args only reads, and which paths
// it reads (operands are in their source form when only the shell can
// expand them; a process substitution is not a path).
func readOnlyCommand(name string, args []string, lit []bool) ([]string, bool) {
	switch name {
	case "git":
		return readOnlyGit(args, lit)
	case "find":
		return readOnlyFind(args)
	case "jq":
		return readOnlyJq(args, lit)
	case "sed":
		return readOnlySed(args, lit)
	case "printf":
		if len(args) > 0 && strings.HasPrefix(args[0], "-v") {
			return nil, false
		}
		return nil, true
	case "date":
		p, ok := optSpec{short: "uR", valued: "d", long: longs(`utc universal date= iso-8601[=] rfc-3339= rfc-email`)}.parse(args)
		for _, i := range p.operands {
			if !strings.HasPrefix(args[i], "+") {
				return nil, false // date MMDDhhmm sets the clock
			}
		}
		return nil, ok
	}
	spec, known := roCommands[name]
	if !known {
		return nil, false
	}
	return spec.judge(args, lit)
}

func (c roCommand) judge(args []string, lit []bool) ([]string, bool) {
	p, ok := c.opts.parse(args)
	if !ok {
		return nil, false
	}
	ops := p.operands
	if c.maxOperands < 0 && len(ops) > 0 || c.maxOperands > 0 && len(ops) > c.maxOperands {
		return nil, false
	}
	switch c.operands {
	case operandText:
		return nil, true
	case patternThenPaths:
		given := false
		for o := range c.patternOpts {
			given = given || p.seen[o]
		}
		if !given && len(ops) > 0 {
			ops = ops[1:]
		}
	case operandPaths:
	}
	reads := p.reads
	paths := 0
	for _, i := range ops {
		if args[i] == "-" {
			continue // stdin
		}
		paths++
		if i < len(lit) && !lit[i] && (strings.HasPrefix(args[i], "<(") || strings.HasPrefix(args[i], ">(")) {
			continue // a process substitution: its command is judged
		}
		reads = append(reads, args[i])
	}
	if paths == 0 && (c.implicitDot || p.seen["r"] || p.seen["recursive"]) {
		reads = append(reads, ".")
	}
	return reads, true
}

func readOnlyGit(args []string, lit []bool) ([]string, bool) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if !gitGlobalOptions[args[i]] {
			return nil, false
		}
		i++
	}
	if i >= len(args) {
		return nil, false
	}
	spec, ok := roGit[args[i]]
	if !ok {
		return nil, false
	}
	rest := args[i+1:]
	if (args[i] == "branch" || args[i] == "tag") && len(operands(rest)) > 0 && !containsAny(rest, "-l", "--list") {
		return nil, false // creates a branch or tag
	}
	reads, ok := spec.judge(rest, lit[min(i+1, len(lit)):])
	if !ok {
		return nil, false
	}
	// git reads the repository it finds from its cwd.
	return append(reads, "."), true
}

// plainProgram: the command is named, not given by a path, unless the path
// is in the system's directories (./ls is whatever the workspace holds).
func plainProgram(word string, lit bool) bool {
	if !lit {
		return false
	}
	if !strings.Contains(word, "/") {
		return true
	}
	switch path.Dir(word) {
	case "/bin", "/usr/bin", "/usr/local/bin":
		return true
	}
	return false
}
