// How the interleaving test folds each service's read model in a chosen
// order of partitions and compares the stores it builds.

package all_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	controlreadmodel "github.com/agentruntime/agentruntime/services/control/readmodel"
	evidencereadmodel "github.com/agentruntime/agentruntime/services/evidence/readmodel"
	permissionreadmodel "github.com/agentruntime/agentruntime/services/permission/readmodel"
	routingreadmodel "github.com/agentruntime/agentruntime/services/routing/readmodel"
	tasksreadmodel "github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// foldedService is a service's projections and how to show its documents.
type foldedService struct {
	name        string
	projections []projector.Projection
	decode      func(key string) proto.Message // the document type of a key; nil: not protobuf
}

func foldedServices(log *eventlog.Log) []foldedService {
	byPrefix := func(types map[string]func() proto.Message) func(string) proto.Message {
		return func(key string) proto.Message {
			for prefix, m := range types {
				if strings.HasPrefix(key, prefix) || strings.Contains(key, ":"+prefix) {
					return m()
				}
			}
			return nil
		}
	}
	return []foldedService{
		{name: "control", projections: []projector.Projection{controlreadmodel.Projection{}, controlreadmodel.Claims{Subjects: log.Subjects}}, decode: byPrefix(map[string]func() proto.Message{
			"sess:": func() proto.Message { return &controlv1.Session{} }, "thr:": func() proto.Message { return &controlv1.ThreadRead{} },
			"turn:": func() proto.Message { return &controlv1.Turn{} }, "act:": func() proto.Message { return &controlv1.Action{} },
			"sub:": func() proto.Message { return &controlv1.Subagent{} }, "chan:": func() proto.Message { return &controlv1.Channel{} },
			"proc:": func() proto.Message { return &controlv1.Process{} }, "attempts:": func() proto.Message { return &controlv1.TurnAttempts{} },
			"tools:": func() proto.Message { return &eventsv1.SnapshotUpdated{} },
		})},
		{name: "tasks", projections: []projector.Projection{tasksreadmodel.Records{Subjects: log.Subjects}}, decode: byPrefix(map[string]func() proto.Message{
			"task:": func() proto.Message { return &tasksv1.Task{} }, "job:": func() proto.Message { return &tasksv1.Job{} },
		})},
		{name: "routing", projections: []projector.Projection{routingreadmodel.Projection{Subjects: log.Subjects}}, decode: byPrefix(map[string]func() proto.Message{
			"turn/": func() proto.Message { return &routingv1.RoutingLimitSummary{} }, "thread/": func() proto.Message { return &routingv1.RoutingLimitSummary{} },
			"reg/": func() proto.Message { return &eventsv1.Registry{} }, "taskprof/": func() proto.Message { return &eventsv1.TaskProfile{} },
		})},
		{name: "permission", projections: []projector.Projection{permissionreadmodel.New(log.Subjects)}, decode: byPrefix(map[string]func() proto.Message{
			"level:": func() proto.Message { return &permissionv1.LevelState{} }, "hooks": func() proto.Message { return &permissionv1.ListHooksResponse{} },
			"evaluation:":  func() proto.Message { return &permissionv1.DecisionSummary{} },
			"summary:":     func() proto.Message { return &permissionv1.GetPermissionSandboxSummaryResponse{} },
			"environment:": func() proto.Message { return &permissionv1.GetExecutionEnvironmentResponse{} },
		})},
		{name: "evidence", projections: []projector.Projection{evidencereadmodel.Projection{}}, decode: func(string) proto.Message { return nil }},
	}
}

// readPartitions reads what the projection follows in each partition.
func readPartitions(ctx context.Context, t *testing.T, log *eventlog.Log, p projector.Projection) [][]*eventlog.Record {
	t.Helper()
	out := make([][]*eventlog.Record, log.Partitions())
	for k := range out {
		if _, err := log.Partition(k).Read(ctx, p.Filters(), eventlog.FromStart, func(r *eventlog.Record) error {
			out[k] = append(out[k], r)
			return nil
		}); err != nil {
			t.Fatalf("read partition %d for %s: %v", k, p.Name(), err)
		}
	}
	return out
}

// move is partition k folding its next n events.
type move struct{ k, n int }

// order is an interleaving of the partitions' folds: rounds of moves.
// The moves of a concurrent round all fold on the store as the round
// found it and are written after, in the order given; otherwise each is
// applied before the next folds.
type order struct {
	name       string
	concurrent bool
	// rounds starts a fold: it returns the next round given how many
	// events each partition has left, none when nothing is left.
	rounds func() func(left []int) []move
}

func stateless(next func(left []int) []move) func() func(left []int) []move {
	return func() func(left []int) []move { return next }
}

func byPartition(left []int) []move {
	for k, n := range left {
		if n > 0 {
			return []move{{k, n}}
		}
	}
	return nil
}

func roundRobin(left []int) []move {
	var ms []move
	for k := len(left) - 1; k >= 0; k-- {
		if left[k] > 0 {
			ms = append(ms, move{k, 1})
		}
	}
	return ms
}

// randomRounds: each partition with events left takes part in a round
// with probability 2/3, folding 1 to 6 of its next events; the writes
// follow in a random order. Each fold starts from the same seed.
func randomRounds(seed uint64) func() func(left []int) []move {
	return func() func(left []int) []move {
		rng := rand.New(rand.NewPCG(seed, seed))
		return func(left []int) []move {
			var ms []move
			for {
				for _, k := range rng.Perm(len(left)) {
					if left[k] > 0 && rng.IntN(3) > 0 {
						ms = append(ms, move{k, 1 + rng.IntN(min(left[k], 6))})
					}
				}
				if len(ms) > 0 || !slices.ContainsFunc(left, func(n int) bool { return n > 0 }) {
					return ms
				}
			}
		}
	}
}

// named is a projection under its partition's checkpoint name, as the
// projector's loop of that partition runs it.
type named struct {
	projector.Projection
	name string
}

func (n named) Name() string { return n.name }

// writers are, per document key or index member ("index ∋ member"), the
// event types of each partition whose fold wrote it.
type writers map[string]map[int]map[string]bool

// fold applies every partition's records to a fresh store in the order
// o, each partition under its own checkpoint, and notes in w who wrote
// what.
func fold(ctx context.Context, t *testing.T, p projector.Projection, recs [][]*eventlog.Record, o order, w writers) *projection.Memory {
	t.Helper()
	store := projection.NewMemory()
	note := func(k int, typ string, b projection.Batch) {
		add := func(key string) {
			if w[key] == nil {
				w[key] = map[int]map[string]bool{}
			}
			if w[key][k] == nil {
				w[key][k] = map[string]bool{}
			}
			w[key][k][typ] = true
		}
		for _, kv := range b.Puts {
			add(kv.Key)
		}
		for _, key := range b.Deletes {
			add(key)
		}
		for _, e := range append(slices.Clone(b.IndexAdds), b.IndexRemoves...) {
			add(e.Index + " ∋ " + e.Member)
		}
	}
	parts := len(recs)
	next := make([]int, parts)
	left := func() []int {
		l := make([]int, parts)
		for k := range l {
			l[k] = len(recs[k]) - next[k]
		}
		return l
	}
	nameOf := func(k int) string { return projector.CheckpointName(p.Name(), parts, k) }
	rounds := o.rounds()
	for {
		moves := rounds(left())
		if len(moves) == 0 {
			return store
		}
		if !o.concurrent {
			for _, m := range moves {
				for range m.n {
					rec := recs[m.k][next[m.k]]
					next[m.k]++
					// The batch ApplyOne applies (Project is deterministic), seen
					// for the writers.
					b, err := p.Project(ctx, store, rec)
					if err != nil {
						t.Fatalf("project %s at %d (%s): %v", p.Name(), rec.Event.GetSequence(), rec.Event.GetType(), err)
					}
					note(m.k, rec.Event.GetType(), b)
					if err := projector.ApplyOne(ctx, store, named{p, nameOf(m.k)}, rec); err != nil {
						t.Fatal(err)
					}
				}
			}
			continue
		}
		// Every move folds on the store as the round found it (an overlay
		// each, as ApplyBatch folds), then the batches are written.
		var batches []projection.Batch
		for _, m := range moves {
			ov := projection.NewOverlay(store)
			var last uint64
			for range m.n {
				rec := recs[m.k][next[m.k]]
				next[m.k]++
				b, err := p.Project(ctx, ov, rec)
				if err != nil {
					t.Fatalf("project %s at %d (%s): %v", p.Name(), rec.Event.GetSequence(), rec.Event.GetType(), err)
				}
				if _, err := ov.Apply(ctx, b); err != nil {
					t.Fatal(err)
				}
				note(m.k, rec.Event.GetType(), b)
				last = rec.Event.GetSequence()
			}
			base, err := store.Checkpoint(ctx, nameOf(m.k))
			if err != nil {
				t.Fatal(err)
			}
			b := ov.Batch(nameOf(m.k), last)
			b.Conditional, b.Base = true, base
			batches = append(batches, b)
		}
		for _, b := range batches {
			if applied, err := store.Apply(ctx, b); err != nil || !applied {
				t.Fatalf("write %s at %d: applied %v, %v", b.Projection, b.Sequence, applied, err)
			}
		}
	}
}

// difference is one key whose value differs between two stores.
type difference struct {
	key    string
	a, b   string // how each store has it ("" when absent)
	fields []string
}

// compareStores lists every document and index member that a and b do
// not hold alike.
func compareStores(a, b *projection.Memory, decode func(string) proto.Message) []difference {
	docsA, ixA := a.Dump()
	docsB, ixB := b.Dump()
	var out []difference
	for _, key := range unionKeys(docsA, docsB) {
		va, inA := docsA[key]
		vb, inB := docsB[key]
		if inA && inB && sameDoc(key, va, vb, decode) {
			continue
		}
		d := difference{key: key}
		d.a, d.b, d.fields = showDocs(key, va, inA, vb, inB, decode)
		out = append(out, d)
	}
	for _, index := range unionKeys(ixA, ixB) {
		ma, mb := members(ixA[index]), members(ixB[index])
		for _, m := range unionKeys(ma, mb) {
			sa, inA := ma[m]
			sb, inB := mb[m]
			if inA == inB && sa == sb {
				continue
			}
			show := func(score float64, in bool) string {
				if !in {
					return ""
				}
				return fmt.Sprintf("member, score %v", score)
			}
			key := index + " ∋ " + m
			out = append(out, difference{key: key, a: show(sa, inA), b: show(sb, inB)})
		}
	}
	return out
}

// sameDoc compares two versions of a document by what they mean: map
// entries of a protobuf message are marshalled in no fixed order.
func sameDoc(key string, va, vb []byte, decode func(string) proto.Message) bool {
	if string(va) == string(vb) {
		return true
	}
	if m := decode(key); m != nil {
		ma, mb := m, proto.Clone(m)
		if proto.Unmarshal(va, ma) == nil && proto.Unmarshal(vb, mb) == nil {
			return proto.Equal(ma, mb)
		}
	}
	var ja, jb any
	if json.Unmarshal(va, &ja) == nil && json.Unmarshal(vb, &jb) == nil {
		return reflect.DeepEqual(ja, jb)
	}
	return false
}

func members(es []projection.IndexEntry) map[string]float64 {
	m := make(map[string]float64, len(es))
	for _, e := range es {
		m[e.Member] = e.Score
	}
	return m
}

func unionKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// showDocs renders two versions of a document, and the fields in which
// they differ when it is a protobuf message or a JSON object: only those
// fields are shown.
func showDocs(key string, va []byte, inA bool, vb []byte, inB bool, decode func(string) proto.Message) (string, string, []string) {
	if !inA || !inB {
		show := func(v []byte, in bool) string {
			if !in {
				return ""
			}
			return showValue(key, v, decode)
		}
		return show(va, inA), show(vb, inB), nil
	}
	if m := decode(key); m != nil {
		ma, mb := m, proto.Clone(m)
		if proto.Unmarshal(va, ma) == nil && proto.Unmarshal(vb, mb) == nil {
			// Each field alone in a message of its own: compared and shown.
			only := func(m proto.Message, fd protoreflect.FieldDescriptor) proto.Message {
				out := m.ProtoReflect().New()
				if m.ProtoReflect().Has(fd) {
					out.Set(fd, m.ProtoReflect().Get(fd))
				}
				return out.Interface()
			}
			var fields, sa, sb []string
			fds := ma.ProtoReflect().Descriptor().Fields()
			for i := range fds.Len() {
				fd := fds.Get(i)
				if fa, fb := only(ma, fd), only(mb, fd); !proto.Equal(fa, fb) {
					fields = append(fields, string(fd.Name()))
					sa = append(sa, compactText(fa))
					sb = append(sb, compactText(fb))
				}
			}
			return strings.Join(sa, " "), strings.Join(sb, " "), fields
		}
	}
	var ja, jb map[string]any
	if json.Unmarshal(va, &ja) == nil && json.Unmarshal(vb, &jb) == nil {
		var fields, sa, sb []string
		for _, f := range unionKeys(ja, jb) {
			x, _ := json.Marshal(ja[f])
			y, _ := json.Marshal(jb[f])
			if string(x) != string(y) {
				fields = append(fields, f)
				sa = append(sa, f+":"+string(x))
				sb = append(sb, f+":"+string(y))
			}
		}
		return strings.Join(sa, " "), strings.Join(sb, " "), fields
	}
	return showValue(key, va, decode), showValue(key, vb, decode), nil
}

func showValue(key string, v []byte, decode func(string) proto.Message) string {
	if m := decode(key); m != nil && proto.Unmarshal(v, m) == nil {
		return compactText(m)
	}
	if utf8.Valid(v) {
		return clip(string(v))
	}
	return clip(fmt.Sprintf("%q", v))
}

func compactText(m proto.Message) string {
	return clip(prototext.MarshalOptions{}.Format(m))
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// compareFolds compares each store with the first (the reference) and
// renders every key that differs in one of them, at most 30: who wrote
// it, and how each interleaving that differs has it.
func compareFolds(stores []*projection.Memory, w writers, decode func(string) proto.Message) (int, string) {
	byKey := map[string][]difference{} // by key, per store after the first
	for i, st := range stores[1:] {
		for _, d := range compareStores(stores[0], st, decode) {
			if byKey[d.key] == nil {
				byKey[d.key] = make([]difference, len(stores)-1)
			}
			byKey[d.key][i] = d
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	absent := func(s string) string {
		if s == "" {
			return "(absent)"
		}
		return s
	}
	var b strings.Builder
	for n, key := range keys {
		if n == 30 {
			fmt.Fprintf(&b, "  … and %d more keys\n", len(keys)-n)
			break
		}
		fmt.Fprintf(&b, "  %s\n    written by: %s\n", key, w.of(key))
		for i, d := range byKey[key] {
			if d.key == "" {
				continue
			}
			name := orders[i+1].name
			if j := slices.IndexFunc(byKey[key][:i], func(e difference) bool { return e.key != "" && e.a == d.a && e.b == d.b }); j >= 0 {
				fmt.Fprintf(&b, "    %s: the same as %s\n", name, orders[j+1].name)
				continue
			}
			if len(d.fields) > 0 {
				fmt.Fprintf(&b, "    %s differs in %s:\n", name, strings.Join(d.fields, ", "))
			} else {
				fmt.Fprintf(&b, "    %s differs:\n", name)
			}
			fmt.Fprintf(&b, "      %s: %s\n      %s: %s\n", orders[0].name, absent(d.a), name, absent(d.b))
		}
	}
	return len(keys), b.String()
}

// of renders the partitions whose folds wrote a key, with the event types.
func (w writers) of(key string) string {
	ks := make([]int, 0, len(w[key]))
	for k := range w[key] {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var ws []string
	for _, k := range ks {
		types := make([]string, 0, len(w[key][k]))
		for typ := range w[key][k] {
			types = append(types, typ)
		}
		sort.Strings(types)
		ws = append(ws, fmt.Sprintf("partition %d (%s)", k, strings.Join(types, ", ")))
	}
	if len(ws) == 0 {
		return "none noted"
	}
	if len(ks) > 1 {
		return strings.Join(ws, "; ") + " <- the folds of several partitions write it"
	}
	return ws[0]
}
