package main

import (
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	routingapp "github.com/agentruntime/agentruntime/services/routing/app"
)

// examples/mcp/models.yaml is a registry routing loads, and the worker
// serves each of its models with its provider's API.
func TestTheExampleRegistryNamesEachModelsAPI(t *testing.T) {
	reg, err := routingapp.LoadConfig("../../examples/mcp/models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{"OLLAMA_API_KEY": "none"}
	p, err := provider.FromRegistry(reg, func(k string) string { return keys[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "claude-sonnet-4-5 (anthropic, anthropic); gpt-5 (openai, openai_responses); llama3 (local, openai_chat)"
	if got := strings.Join(p.Served(), "; "); got != want {
		t.Fatalf("served %s, want %s", got, want)
	}
}

// deploy/config/models.example.yaml names its providers' APIs too.
func TestTheDeployRegistryExampleLoads(t *testing.T) {
	reg, err := routingapp.LoadConfig("../../deploy/config/models.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := provider.FromRegistry(reg, func(string) string { return "k" }, nil)
	if err != nil || len(p.Models) == 0 {
		t.Fatalf("%v, %v", p, err)
	}
}
