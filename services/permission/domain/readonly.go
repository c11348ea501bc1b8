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
