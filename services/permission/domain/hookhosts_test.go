package domain

import (
	"testing"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func TestHookHostPatterns(t *testing.T) {
	hosts, err := ParseHookHosts([]string{"hooks.internal:8443", "*.hooks.example", "10.0.0.5", "[fd00::1]:9000", " "})
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]bool{
		"https://hooks.internal:8443/x": true,
		"https://HOOKS.internal:8443/x": true,
		"https://hooks.internal/x":      false, // 443, not 8443
		"http://a.hooks.example/x":      true,
		"http://a.b.hooks.example:1/x":  true,
		"http://hooks.example/x":        false, // the wildcard is below it
		"http://evilhooks.example/x":    false,
		"http://10.0.0.5:1234/x":        true,
		"http://10.0.0.6/x":             false,
		"http://[fd00::1]:9000/x":       true,
		"http://[fd00::1]:9001/x":       false,
		"http://127.0.0.1/x":            false,
	} {
		err := hosts.CheckHookTarget(&eventsv1.Hook{Handler: &eventsv1.Hook_HttpUrl{HttpUrl: target}})
		if (err == nil) != want {
			t.Errorf("%s: %v, want allowed=%v", target, err, want)
		}
	}
	for target, want := range map[string]bool{
		"hooks.internal:8443":        true,
		"dns:///hooks.internal:8443": true,
		"a.hooks.example:50051":      true,
		"hooks.internal":             false, // gRPC's default port 443
		"unix:///run/x.sock":         false,
		"xds:///hooks.internal:8443": false,
	} {
		err := hosts.CheckHookTarget(&eventsv1.Hook{Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: target}})
		if (err == nil) != want {
			t.Errorf("%s: %v, want allowed=%v", target, err, want)
		}
	}
	var any *HookHosts
	if err := any.CheckHookTarget(&eventsv1.Hook{Handler: &eventsv1.Hook_HttpUrl{HttpUrl: "http://169.254.169.254/"}}); err != nil {
		t.Errorf("no restriction refused a target: %v", err)
	}
	none, _ := ParseHookHosts(nil)
	if err := none.CheckHookTarget(&eventsv1.Hook{Handler: &eventsv1.Hook_HttpUrl{HttpUrl: "http://127.0.0.1/"}}); err == nil {
		t.Error("an empty list allowed a target")
	}
	for _, bad := range []string{"http://x/y", "a*.example", "*", "*.", "x:port", "user@host"} {
		if _, err := ParseHookHosts([]string{bad}); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}
