package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Fold is a projection's name and fold version. A projection's fold
// version is an integer constant declared next to its name and bumped by
// any change to what it stores (a key, an index, a document's shape) or to
// how it folds an event into it: a read model written by one fold version
// is never read by another (docs/upgrading.md).
type Fold struct {
	Name    string
	Version int
}

// Generation names the read models of one store as one set of folds built
// them. The projections of a service share their store's key space (a
// read names a key, not the projection that wrote it), so they are
// versioned together: a change to
// any fold version is a new generation of the whole store, built beside
// the old one (docs/upgrading.md).
type Generation struct {
	// ID is short, stable and derived from the folds: it goes into every
	// key of the generation ("g" and 12 hex digits).
	ID    string
	folds []Fold
}

// NewGeneration is the generation of folds (in any order).
func NewGeneration(folds ...Fold) Generation {
	sorted := slices.Clone(folds)
	slices.SortFunc(sorted, func(a, b Fold) int { return strings.Compare(a.Name, b.Name) })
	g := Generation{folds: sorted}
	sum := sha256.Sum256([]byte(g.Label()))
	g.ID = "g" + hex.EncodeToString(sum[:6])
	return g
}

// Label names every fold of the generation, "control=1,control.claims=1":
// what the store records beside the ID, for an operator.
func (g Generation) Label() string {
	parts := make([]string, len(g.folds))
	for i, f := range g.folds {
		parts[i] = f.Name + "=" + strconv.Itoa(f.Version)
	}
	return strings.Join(parts, ",")
}

// Folds are the generation's folds, sorted by name.
func (g Generation) Folds() []Fold { return slices.Clone(g.folds) }

// Covers reports whether the checkpoint named name belongs to one of the
// generation's projections: the projection's own name or one of its
// partitions' ("control@p3", pkg/projector.CheckpointName). Other
// checkpoints (reactors', which act on facts rather than fold them) are
// shared by every generation: a new generation must not react again to
// what an older one reacted to.
func (g Generation) Covers(name string) bool {
	base, _, _ := strings.Cut(name, "@p")
	return slices.ContainsFunc(g.folds, func(f Fold) bool { return f.Name == base })
}

func (g Generation) String() string { return fmt.Sprintf("%s (%s)", g.ID, g.Label()) }
