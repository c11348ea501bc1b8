package domain

// MatchGlob matches s against pattern, where "*" matches any run of
// characters except sep, "**" matches any run including sep, and "?" one
// character other than sep. With sep == 0, "*" and "**" are the same. There
// are no character classes or escapes: rules stay readable and a pattern
// means the same thing to everyone who reads it.
//
// It runs in O(len(pattern) * len(s)) time whatever the input (no
// backtracking blow-up on patterns like "*a*a*a*b").
func MatchGlob(pattern, s string, sep byte) bool {
	p := []rune(pattern)
	r := []rune(s)
	// prev[j]: pattern[:i] matches s[:j].
	prev := make([]bool, len(r)+1)
	cur := make([]bool, len(r)+1)
	prev[0] = true
	for i := 0; i < len(p); i++ {
		double := p[i] == '*' && i+1 < len(p) && p[i+1] == '*'
		switch {
		case double:
			// "**" is one token: skip its second star.
			cur[0] = prev[0]
			for j := 1; j <= len(r); j++ {
				cur[j] = prev[j] || cur[j-1]
			}
			i++
		case p[i] == '*':
			cur[0] = prev[0]
			for j := 1; j <= len(r); j++ {
				cur[j] = prev[j] || (cur[j-1] && (sep == 0 || r[j-1] != rune(sep)))
			}
		default:
			cur[0] = false
			for j := 1; j <= len(r); j++ {
				if p[i] == '?' {
					cur[j] = prev[j-1] && (sep == 0 || r[j-1] != rune(sep))
				} else {
					cur[j] = prev[j-1] && r[j-1] == p[i]
				}
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(r)]
}

// MatchPathGlob matches a normalized path: "/src/**" matches "/src" and
// everything below it, "*" stays within one element.
func MatchPathGlob(pattern, p string) bool {
	if MatchGlob(pattern, p, '/') {
		return true
	}
	// "/src/**" also names the directory itself.
	if n := len(pattern); n >= 3 && pattern[n-3:] == "/**" {
		return MatchGlob(pattern[:n-3], p, '/')
	}
	return false
}
