package domain

import (
	"fmt"
	"strconv"
	"strings"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// promptList bounds how many paths or hosts a prompt names.
const promptList = 8

// ApprovalPrompt is what a person is asked for a permission request. The
// runtime builds it from what it judged, never from a caller's text:
// the target and its name, the access, the command line as judged (after
// any hook rewrite), the paths and hosts the evaluation found in it, and
// why it asks. Every caller-given value is quoted (strconv.Quote), so a
// name or command cannot pose as the runtime's own words (a newline, a
// second question), and long values are cut, marked.
func ApprovalPrompt(target eventsv1.TargetKind, name string, access eventsv1.Access, command string, paths, hosts []string, reason string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Allow %s %s", enumWord(target.String(), "TARGET_KIND_"), strconv.Quote(Cut(name, 120)))
	if access != eventsv1.Access_ACCESS_UNSPECIFIED {
		fmt.Fprintf(&b, " to %s", enumWord(access.String(), "ACCESS_"))
	}
	if command != "" {
		fmt.Fprintf(&b, ": command %s", strconv.Quote(SafePreview(command, 400)))
	}
	if len(paths) > 0 {
		fmt.Fprintf(&b, "; paths %s", quotedList(paths))
	}
	if len(hosts) > 0 {
		fmt.Fprintf(&b, "; hosts %s", quotedList(hosts))
	}
	b.WriteString("?")
	if reason != "" {
		b.WriteString(" " + reason)
	}
	return b.String()
}

func enumWord(s, prefix string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s, prefix)), "_", " ")
}

func quotedList(items []string) string {
	seen := map[string]bool{}
	var out []string
	more := 0
	for _, it := range items {
		if seen[it] {
			continue
		}
		seen[it] = true
		if len(out) == promptList {
			more++
			continue
		}
		out = append(out, strconv.Quote(Cut(it, 200)))
	}
	s := strings.Join(out, ", ")
	if more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}
