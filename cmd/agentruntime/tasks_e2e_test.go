package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// `agentruntime tasks ls|show|cancel|retry` on the real binary against
// the tasks service of `agentruntime dev`.
func TestTasksCommands(t *testing.T) {
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-worker")
	client := tasksv1.NewTasksServiceClient(dial(t, dev.Addr))
	created, err := client.CreateTask(testkit.Context(t), &tasksv1.CreateTaskRequest{TaskId: "task_cli", Spec: &tasksv1.TaskSpec{
		Title: "Summarize the logs", Objective: "Read the logs and write a summary", TaskKind: "analysis"}})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetTask().GetTaskId() != "task_cli" {
		t.Fatalf("created %v", created)
	}
	out := cli(t, "tasks", "ls", "--addr", dev.Addr)
	if !strings.Contains(out, "TASK") || !strings.Contains(out, "task_cli") || !strings.Contains(out, "Summarize the logs") {
		t.Fatalf("tasks ls:\n%s", out)
	}
	if out := cli(t, "tasks", "ls", "--addr", dev.Addr, "--status", "completed"); strings.TrimSpace(out) != "no tasks" {
		t.Fatalf("tasks ls --status completed:\n%s", out)
	}
	var row map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(cli(t, "tasks", "ls", "--addr", dev.Addr, "--json"))), &row); err != nil || row["taskId"] != "task_cli" {
		t.Fatalf("tasks ls --json: %v %v", row, err)
	}
	if out := cli(t, "tasks", "show", "--addr", dev.Addr, "task_cli"); !strings.Contains(out, "task task_cli") || !strings.Contains(out, "Read the logs") || !strings.Contains(out, "analysis") {
		t.Fatalf("tasks show:\n%s", out)
	}
	if out := cli(t, "tasks", "cancel", "--addr", dev.Addr, "--reason", "not needed", "task_cli"); !strings.Contains(out, "task task_cli: cancelled") {
		t.Fatalf("tasks cancel: %s", out)
	}
	if out := cli(t, "tasks", "retry", "--addr", dev.Addr, "--reason", "needed after all", "task_cli"); !strings.Contains(out, "retrying") {
		t.Fatalf("tasks retry: %s", out)
	}
	if out := cli(t, "tasks", "show", "--addr", dev.Addr, "task_cli"); !strings.Contains(out, "retrying") || !strings.Contains(out, "needed after all") {
		t.Fatalf("tasks show after retry:\n%s", out)
	}
	// Mistakes are named.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tasks", "show", "--addr", dev.Addr, "task_nope"}, "not found"},
		{[]string{"tasks", "ls", "--addr", dev.Addr, "--status", "bogus"}, `--status "bogus": not a task status`},
		{[]string{"tasks", "retry", "--addr", dev.Addr, "task_cli"}, "tasks retry"}, // retrying is not retryable
		{[]string{"tasks", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"tasks", "show", "--addr", dev.Addr}, "usage: agentruntime tasks"},
	} {
		out, err := exec.Command(binary, c.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: %v %s (want %q)", c.args, err, out, c.want)
		}
	}
}
