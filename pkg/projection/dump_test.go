package projection_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/projection"
)

// Dump holds the documents and indexes as Get and Range see them, without
// checkpoints, and copies: changing what it returned changes nothing.
func TestMemoryDump(t *testing.T) {
	ctx := context.Background()
	m := projection.NewMemory()
	for _, b := range []projection.Batch{
		{Projection: "a", Sequence: 1, Puts: []projection.KV{{Key: "k1", Value: []byte("v1")}, {Key: "empty", Value: []byte{}}},
			IndexAdds: []projection.IndexEntry{{Index: "ix", Member: "m2", Score: 2}, {Index: "ix", Member: "m1", Score: 2}, {Index: "ix", Member: "m0", Score: 1}}},
		{Projection: "b", Sequence: 7, Puts: []projection.KV{{Key: "k2", Value: []byte("v2")}},
			IndexAdds: []projection.IndexEntry{{Index: "gone", Member: "x", Score: 1}}},
		{Projection: "b", Sequence: 8, Deletes: []string{"k2"}, IndexRemoves: []projection.IndexEntry{{Index: "gone", Member: "x"}}},
	} {
		if _, err := m.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	docs, indexes := m.Dump()
	wantDocs := map[string][]byte{"k1": []byte("v1"), "empty": {}}
	if !reflect.DeepEqual(docs, wantDocs) {
		t.Fatalf("docs = %q, want %q", docs, wantDocs)
	}
	ranged, err := m.Range(ctx, "ix", projection.RangeQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string][]projection.IndexEntry{"ix": ranged}; !reflect.DeepEqual(indexes, want) || len(ranged) != 3 {
		t.Fatalf("indexes = %v, want %v", indexes, want)
	}
	docs["k1"][0] = 'X'
	indexes["ix"][0].Member = "changed"
	if v, _ := m.Get(ctx, "k1"); string(v) != "v1" {
		t.Fatalf("Dump aliases the stored document: %q", v)
	}
	if again, _ := m.Range(ctx, "ix", projection.RangeQuery{}); again[0].Member != "m0" {
		t.Fatalf("Dump aliases the stored index: %v", again)
	}
}
