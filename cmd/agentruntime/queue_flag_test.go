package main

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/services/control/app"
)

// --max-queued-turns takes its default from AR_MAX_QUEUED_TURNS, else the
// control service's default, and dev and serve refuse a bound below 1
// before they open anything.
func TestMaxQueuedTurnsFlag(t *testing.T) {
	parse := func(args ...string) common { return parseCommon(t, args...) }
	if c := parse(); c.maxQueuedTurns != app.DefaultMaxQueuedTurns || c.check() != nil {
		t.Fatalf("default bound %d (%v), want %d", c.maxQueuedTurns, c.check(), app.DefaultMaxQueuedTurns)
	}
	t.Setenv("AR_MAX_QUEUED_TURNS", "25")
	if c := parse(); c.maxQueuedTurns != 25 {
		t.Fatalf("AR_MAX_QUEUED_TURNS=25 gave %d", c.maxQueuedTurns)
	}
	if c := parse("--max-queued-turns", "7"); c.maxQueuedTurns != 7 {
		t.Fatalf("the flag gave %d, want 7 (over the environment)", c.maxQueuedTurns)
	}
	for _, run := range map[string]func() error{
		"dev": func() error {
			return runDev(context.Background(), []string{"--data-dir", t.TempDir(), "--max-queued-turns", "0"}, io.Discard, io.Discard)
		},
		"serve": func() error {
			return runServe(context.Background(), []string{"control", "--max-queued-turns", "0"}, io.Discard, io.Discard)
		},
	} {
		if err := run(); err == nil || !strings.Contains(err.Error(), "--max-queued-turns 0") {
			t.Fatalf("a bound of 0: %v, want it refused naming the flag", err)
		}
	}
}

// --partitions takes its default from AR_PARTITIONS, else 1, and dev and
// serve refuse a count outside 1..64 before they open anything.
func TestPartitionsFlag(t *testing.T) {
	parse := func(args ...string) common { return parseCommon(t, args...) }
	if c := parse(); c.partitions != 1 || c.logConfig(eventlog.Config{}).Partitions != 1 {
		t.Fatalf("default %d partitions, want 1", c.partitions)
	}
	t.Setenv("AR_PARTITIONS", "3")
	if c := parse(); c.logConfig(eventlog.Config{}).Partitions != 3 {
		t.Fatalf("AR_PARTITIONS=3 gave %d", c.partitions)
	}
	for _, bad := range []string{"0", "65"} {
		for name, run := range map[string]func() error{
			"dev": func() error {
				return runDev(context.Background(), []string{"--data-dir", t.TempDir(), "--partitions", bad}, io.Discard, io.Discard)
			},
			"serve": func() error {
				return runServe(context.Background(), []string{"control", "--partitions", bad}, io.Discard, io.Discard)
			},
		} {
			if err := run(); err == nil || !strings.Contains(err.Error(), "--partitions "+bad) {
				t.Fatalf("%s with %s partitions: %v, want it refused naming the flag", name, bad, err)
			}
		}
	}
}

// parseCommon parses the flags every serving command shares, with the
// AR_* environment defaults.
func parseCommon(t *testing.T, args ...string) common {
	t.Helper()
	var c common
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.register(fs, "127.0.0.1:0")
	if err := parseFlags(fs, args); err != nil {
		t.Fatal(err)
	}
	return c
}
