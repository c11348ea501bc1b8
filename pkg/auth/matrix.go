package auth

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Matrix renders the role matrix of services as Markdown: one table per
// service, one row per method in declaration order, a column per role. A
// worker cell reads "held" where a worker calls the method only on the
// sessions it holds (HeldSessionReads).
// docs/security.md embeds it, and a test keeps the two equal.
func Matrix(services []protoreflect.ServiceDescriptor) string {
	services = slices.Clone(services)
	slices.SortFunc(services, func(a, b protoreflect.ServiceDescriptor) int {
		return strings.Compare(string(a.FullName()), string(b.FullName()))
	})
	var b strings.Builder
	for i, sd := range services {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "### %s\n\n", sd.FullName())
		fmt.Fprintf(&b, "| RPC | least role | %s |\n", strings.Join(Roles, " | "))
		b.WriteString("|---|---|" + strings.Repeat("---|", len(Roles)) + "\n")
		for j := range sd.Methods().Len() {
			m := sd.Methods().Get(j)
			a, ok := AccessOf(m)
			if !ok {
				fmt.Fprintf(&b, "| %s | **undeclared: nobody** |%s\n", m.Name(), strings.Repeat(" |", len(Roles)))
				continue
			}
			cells := make([]string, len(Roles))
			for k, r := range Roles {
				cells[k] = " "
				if Permits(a, r) {
					cells[k] = "✓"
					if r == RoleWorker && slices.Contains(HeldSessionReads, "/"+string(sd.FullName())+"/"+string(m.Name())) {
						cells[k] = "held"
					}
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", m.Name(), Describe(a), strings.Join(cells, " | "))
		}
	}
	return b.String()
}
