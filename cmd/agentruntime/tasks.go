package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/enums"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

const tasksUsage = `usage: agentruntime tasks <command> [flags]

  ls                    the tenant's tasks (--session, --status; --json)
  show <task-id>        one task: status, progress, attempts, edges (--json)
  retry <task-id>       a new attempt of a failed, lost, timed out or cancelled task (--reason)
  cancel <task-id>      cancel a task (--reason, --force, --no-propagation)
`

func runTasks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, tasksUsage)
		return errUsage
	}
	verb := args[0]
	fs := flag.NewFlagSet("agentruntime tasks "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf                    clientFlags
		session, statusName   string
		reason                string
		asJSON, force, noProp bool
	)
	cf.register(fs)
	switch verb {
	case "ls":
		fs.StringVar(&session, "session", "", "only tasks of this session")
		fs.StringVar(&statusName, "status", "", "only tasks in this status (e.g. running, failed, completed)")
		fs.BoolVar(&asJSON, "json", false, "one task per line as JSON")
	case "show":
		fs.BoolVar(&asJSON, "json", false, "the task as JSON")
	case "retry":
		fs.StringVar(&reason, "reason", "retried with agentruntime tasks retry", "why a new attempt (recorded on it)")
	case "cancel":
		fs.StringVar(&reason, "reason", "cancelled with agentruntime tasks cancel", "why (recorded on the task)")
		fs.BoolVar(&force, "force", false, "end a cancelling task now, abandoning its active run")
		fs.BoolVar(&noProp, "no-propagation", false, "do not cancel its active child tasks and jobs")
	default:
		fmt.Fprintf(stderr, "agentruntime tasks: unknown command %q\n\n%s", verb, tasksUsage)
		return errUsage
	}
	rest, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	wantID := verb != "ls"
	if (wantID && len(rest) != 1) || (!wantID && len(rest) != 0) {
		fmt.Fprint(stderr, tasksUsage)
		return errUsage
	}
	conn, err := cf.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	client := tasksv1.NewTasksServiceClient(conn)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch verb {
	case "ls":
		var st tasksv1.TaskStatus
		if statusName != "" {
			v, ok := tasksv1.TaskStatus_value["TASK_STATUS_"+strings.ToUpper(statusName)]
			if !ok {
				return fmt.Errorf("--status %q: not a task status (draft, accepted, queued, running, waiting_input, blocked, paused, retrying, cancelling, cancelled, timed_out, failed, lost, completed, archived, ...)", statusName)
			}
			st = tasksv1.TaskStatus(v)
		}
		return listTasks(rctx, client, &tasksv1.ListTasksRequest{SessionId: session, Status: st}, asJSON, stdout)
	case "show":
		resp, err := client.GetTask(rctx, &tasksv1.GetTaskRequest{TaskId: rest[0]})
		if err != nil {
			return rpcError("tasks show", err)
		}
		if asJSON {
			b, err := protojson.Marshal(resp)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, string(b))
			return err
		}
		showTask(stdout, resp)
		return nil
	case "retry":
		resp, err := client.RetryTask(rctx, &tasksv1.RetryTaskRequest{TaskId: rest[0], Reason: reason})
		if err != nil {
			return rpcError("tasks retry", err)
		}
		fmt.Fprintf(stdout, "task %s: retrying (a worker polling for tasks picks up the new attempt) at sequence %d\n", rest[0], resp.GetResult().GetSequence())
		return nil
	default: // cancel
		resp, err := client.CancelTask(rctx, &tasksv1.CancelTaskRequest{TaskId: rest[0], Reason: reason, Force: force, NoPropagation: noProp})
		if err != nil {
			return rpcError("tasks cancel", err)
		}
		fmt.Fprintf(stdout, "task %s: %s\n", rest[0], taskStatus(resp.GetStatus()))
		return nil
	}
}

func listTasks(ctx context.Context, client tasksv1.TasksServiceClient, req *tasksv1.ListTasksRequest, asJSON bool, stdout io.Writer) error {
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "TASK\tSTATUS\tATTEMPTS\tSESSION\tUPDATED\tTITLE")
	}
	n := 0
	for {
		resp, err := client.ListTasks(ctx, req)
		if err != nil {
			return rpcError("tasks ls", err)
		}
		for _, t := range resp.GetTasks() {
			n++
			if asJSON {
				b, err := protojson.Marshal(t)
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, string(b))
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", t.GetTaskId(), taskStatus(t.GetStatus()), len(t.GetAttempts()),
				orDash(t.GetSessionId()), when(t.GetUpdatedAt()), clipLine(t.GetSpec().GetTitle(), 60))
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if asJSON {
		return nil
	}
	if n == 0 {
		_, err := fmt.Fprintln(stdout, "no tasks")
		return err
	}
	return tw.Flush()
}

func showTask(w io.Writer, resp *tasksv1.GetTaskResponse) {
	t := resp.GetTask()
	fmt.Fprintf(w, "task %s  %s", t.GetTaskId(), taskStatus(t.GetStatus()))
	if t.GetStatusReason() != "" {
		fmt.Fprintf(w, " (%s)", t.GetStatusReason())
	}
	fmt.Fprintln(w)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-10s %s\n", k, v)
		}
	}
	line("title", t.GetSpec().GetTitle())
	line("objective", clipLine(t.GetSpec().GetObjective(), 200))
	line("kind", t.GetSpec().GetTaskKind())
	line("session", t.GetSessionId())
	line("thread", t.GetThreadId())
	line("parent", t.GetParentTaskId())
	if p := t.GetProgress(); p != nil {
		line("progress", strings.TrimSpace(fmt.Sprintf("%s %s %.0f%%", p.GetPhase(), p.GetSummary(), p.GetPercent())))
	}
	if e := t.GetLastError(); e != nil {
		line("error", e.GetCategory()+": "+e.GetMessage())
	}
	line("created", when(t.GetCreatedAt()))
	line("updated", when(t.GetUpdatedAt()))
	if len(t.GetAttempts()) > 0 {
		fmt.Fprintln(w, "  attempts")
		for _, a := range t.GetAttempts() {
			s := fmt.Sprintf("    %d  %s  %s", a.GetOrdinal(), a.GetRunId(), enums.Word(a.GetStatus()))
			if wk := a.GetWorker().GetWorkerId(); wk != "" {
				s += "  worker " + wk
			}
			if e := a.GetError(); e != nil {
				s += "  " + e.GetCategory() + ": " + clipLine(e.GetMessage(), 80)
			}
			if a.GetReason() != "" {
				s += "  (" + a.GetReason() + ")"
			}
			fmt.Fprintln(w, s)
		}
	}
	for _, e := range append(t.GetEdges(), resp.GetReverseEdges()...) {
		fmt.Fprintf(w, "  edge       %s %s\n", enums.Word(e.GetRelation()), e.GetTargetId())
	}
}

func taskStatus(s tasksv1.TaskStatus) string {
	return enums.Word(s)
}

func when(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
