package peers

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentruntime/agentruntime/pkg/hostallow"
)

func TestCheckHoldsTheAllowlist(t *testing.T) {
	hosts, err := hostallow.Parse([]string{"peers.example.com:443", "*.agents.example"})
	if err != nil {
		t.Fatal(err)
	}
	d := NewDialer(hosts, nil)
	for url, ok := range map[string]bool{
		"https://peers.example.com/.well-known/agent-card.json": true,
		"https://a.agents.example/card.json":                    true,
		"http://peers.example.com/card.json":                    false, // port 80
		"https://169.254.169.254/card.json":                     false,
		"https://peers.example.com.evil.test/card.json":         false,
		"ftp://peers.example.com/card.json":                     false,
	} {
		err := d.Check(url)
		if (err == nil) != ok {
			t.Errorf("Check(%s) = %v, want allowed %v", url, err, ok)
		}
	}
	if err := NewDialer(hostallow.List{}, nil).Check("https://peers.example.com/"); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("the empty list allowed a peer: %v", err)
	}
}

func TestFlattenReadsEachEvent(t *testing.T) {
	task := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired,
		Message: a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("Which "), a2a.NewTextPart("colour?"))}}
	for i := range MaxArtifacts + 3 {
		task.Artifacts = append(task.Artifacts, &a2a.Artifact{ID: a2a.ArtifactID(strings.Repeat("a", i+1)), Parts: a2a.ContentParts{a2a.NewTextPart("x")}})
	}
	u := Flatten(task)
	if u.TaskID != "t1" || u.ContextID != "c1" || u.State != "input_required" || u.Message != "Which colour?" || len(u.Artifacts) != MaxArtifacts {
		t.Fatalf("Flatten(task) = %+v", u)
	}
	m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hi"))
	m.ContextID = "c2"
	if u := Flatten(m); !u.Direct || u.Message != "hi" || u.ContextID != "c2" {
		t.Fatalf("Flatten(message) = %+v", u)
	}
	art := &a2a.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1", Artifact: &a2a.Artifact{ID: "a", Name: "answer", Parts: a2a.ContentParts{a2a.NewTextPart("done")}}}
	if u := Flatten(art); u.State != "" || len(u.Artifacts) != 1 || u.Artifacts[0].Text != "done" || u.Artifacts[0].Name != "answer" {
		t.Fatalf("Flatten(artifact) = %+v", u)
	}
	for _, s := range []a2a.TaskState{a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected} {
		if !Terminal(StateWord(s)) {
			t.Errorf("%s is not terminal", s)
		}
	}
	if Terminal(StateWord(a2a.TaskStateInputRequired)) || Terminal(StateWord(a2a.TaskStateAuthRequired)) {
		t.Error("an interrupted state is terminal")
	}
}

func TestClipKeepsWholeCharacters(t *testing.T) {
	s := Clip(strings.Repeat("é", maxText))
	if len(s) > maxText || !utf8.ValidString(s) || len(s) < maxText-1 {
		t.Fatalf("Clip gave %d bytes, valid %v", len(s), utf8.ValidString(s))
	}
}

// A card's security parses in A2A 1.0's JSON ({"list": [...]}), in the
// bare list a2a-go writes, and as @a2a-js/sdk 1.3.0's card handler
// writes a scheme ({"scheme": {"$case": ..., "value": ...}}).
func TestACardDeclaringSecurityParses(t *testing.T) {
	for _, raw := range []string{
		`{"name":"p","securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer"}}},"securityRequirements":[{"schemes":{"bearer":{"list":["read"]}}}],"skills":[{"id":"s","securityRequirements":[{"schemes":{"bearer":{"list":[]}}}]}]}`,
		`{"name":"p","securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer"}}},"securityRequirements":[{"schemes":{"bearer":["read"]}}],"skills":[{"id":"s","securityRequirements":[{"schemes":{"bearer":[]}}]}]}`,
		`{"name":"p","securitySchemes":{"bearer":{"scheme":{"$case":"httpAuthSecurityScheme","value":{"scheme":"Bearer","description":"","bearerFormat":""}}}},"securityRequirements":[{"schemes":{"bearer":{"list":["read"]}}}],"skills":[{"id":"s","securityRequirements":[{"schemes":{"bearer":{"list":[]}}}]}]}`,
	} {
		card, err := parseCard([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if len(card.SecurityRequirements) != 1 || strings.Join(card.SecurityRequirements[0]["bearer"], ",") != "read" || len(card.SecuritySchemes) != 1 ||
			len(card.Skills) != 1 || len(card.Skills[0].SecurityRequirements) != 1 {
			t.Fatalf("%s parsed as %+v", raw, card)
		}
		if s, ok := card.SecuritySchemes["bearer"].(a2a.HTTPAuthSecurityScheme); !ok || s.Scheme != "Bearer" {
			t.Fatalf("%s parsed as %+v", raw, card)
		}
	}
	if _, err := parseCard([]byte(`{"name":`)); err == nil {
		t.Fatal("a card cut short parsed")
	}
}

// A peer's structured data reaches the model as JSON, and its files as
// lines that name them; text runs on as it came.
func TestPartsTextReadsEveryKindOfPart(t *testing.T) {
	got := partsText(a2a.ContentParts{
		a2a.NewTextPart("The fence is "), a2a.NewTextPart("blue."),
		a2a.NewDataPart(map[string]any{"colour": "blue", "coats": 2}),
		{Content: a2a.URL("https://painter.example/fence.png"), Filename: "fence.png"},
		{Content: a2a.Raw([]byte("PNG...")), MediaType: "image/png"},
		a2a.NewTextPart("Done."),
	})
	want := "The fence is blue.\n" + `{"coats":2,"colour":"blue"}` + "\n[file fence.png: https://painter.example/fence.png]\n[file image/png: 6 bytes, not read]\nDone."
	if got != want {
		t.Errorf("partsText = %q, want %q", got, want)
	}
}
