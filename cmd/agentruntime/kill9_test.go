package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// childEnv makes the test binary act as an appender process that the test
// kills with SIGKILL.
const childEnv = "AR_TEST_APPENDER_DIR"

var childAgg = eventlog.Aggregate{Tenant: DevTenant, Session: "sess_kill", Kind: "session", ID: "sess_kill"}

// runChild opens the dev store exactly as `agentruntime dev` does and
// appends until it is killed, printing every acknowledged append.
func runChild() int {
	ctx := context.Background()
	d, err := openDev(ctx, os.Getenv(childEnv), false, eventlog.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; ; i++ {
		ev := &eventsv1.RuntimeEvent{
			Type:    "runtime.warning",
			Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: fmt.Sprint(i)}},
		}
		if i%2 == 0 {
			got, err := d.log.Append(ctx, childAgg, eventlog.Any, ev)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Printf("acked %d %s\n", got[0].Sequence, got[0].EventID)
			continue
		}
		res, err := d.log.AppendBatch(ctx, []eventlog.Entry{{Aggregate: childAgg, Event: ev}})
		if err != nil || res[0].Err != nil {
			fmt.Fprintln(os.Stderr, err, res[0].Err)
			return 1
		}
		fmt.Printf("acked %d %s\n", res[0].Sequence, res[0].EventID)
	}
}

func TestKill9LosesNoAcknowledgedEvent(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[uint64]string{}
	sc := bufio.NewScanner(stdout)
	for len(acked) < 500 && sc.Scan() {
		var seq uint64
		var id string
		if _, err := fmt.Sscanf(sc.Text(), "acked %d %s", &seq, &id); err != nil {
			t.Fatalf("child said %q", sc.Text())
		}
		acked[seq] = id
	}
	// Kill mid-stream: the child is still appending.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Acks already written to the pipe before the kill count too.
	for sc.Scan() {
		var seq uint64
		var id string
		if _, err := fmt.Sscanf(sc.Text(), "acked %d %s", &seq, &id); err == nil {
			acked[seq] = id
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v", err)
	}
	if len(acked) < 500 {
		t.Fatalf("child acknowledged only %d appends", len(acked))
	}

	d, err := openDev(context.Background(), dir, false, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	found := map[uint64]string{}
	if _, err := d.log.Read(context.Background(), nil, eventlog.FromStart, func(r *eventlog.Record) error {
		found[r.Event.Sequence] = r.Event.EventId
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var lost []string
	for seq, id := range acked {
		if found[seq] != id {
			lost = append(lost, fmt.Sprintf("%d:%s", seq, id))
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d acknowledged events lost after kill -9: %s", len(lost), strings.Join(lost[:min(len(lost), 10)], " "))
	}
	t.Logf("%d acknowledged, %d in the log after kill -9", len(acked), len(found))
}
