package main

import (
	"context"
	"testing"
)

func TestRequireLoopback(t *testing.T) {
	for listen, loopback := range map[string]bool{
		"127.0.0.1:7070": true, "127.0.0.2:0": true, "[::1]:7070": true, "localhost:7070": true,
		"0.0.0.0:7070": false, ":7070": false, "[::]:7070": false, "10.1.2.3:7070": false, "192.168.1.5:0": false,
	} {
		err := requireLoopback(context.Background(), listen)
		if (err == nil) != loopback {
			t.Errorf("requireLoopback(%q) = %v, want loopback=%v", listen, err, loopback)
		}
	}
}
