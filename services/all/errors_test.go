package all_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/auth"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/services/all/alltest"
)

// The errors clients see are a contract: their code, message, ErrorInfo
// reason and metadata, field violations, precondition violations, resource
// info and whether they carry RetryInfo. This test pins one representative
// error of each kind each service returns, called through real gRPC on the
// five services as `agentruntime dev` runs them, so that moving code
// between packages cannot change what a client sees.

const pinnedModels = `
providers:
  - {id: openai, credential_status: present, regions: [us]}
  - {id: anthropic, credential_status: present, regions: [us]}
models:
  - id: gpt-5-4
    provider: openai
    capabilities: [tools]
    context_window: 400000
    prices_usd_per_million: {input: 1.25, output: 10}
  - id: unpriced
    provider: anthropic
    capabilities: [tools]
rate_limits:
  - {id: gpt-rpm, model: gpt-5-4, requests_per_minute: 1}
`

type clients struct {
	control    controlv1.ControlServiceClient
	tasks      tasksv1.TasksServiceClient
	routing    routingv1.RoutingServiceClient
	permission permissionv1.PermissionServiceClient
	evidence   evidencev1.EvidenceServiceClient
}

func startAll(t *testing.T) clients {
	t.Helper()
	return startSystem(t, pinnedModels, 1).clients
}

// startSystem runs the five services as `agentruntime dev` does, with the
// model registry models, on a log of partitions streams, each service with
// its own in-memory store, behind one gRPC server (API key pinnedKey of
// tenant acme).
func startSystem(t *testing.T, models string, partitions int) *partitionedSystem {
	t.Helper()
	return startSystemWithKeys(t, models, partitions, auth.APIKeyConfig{Name: "alice", Tenant: "acme", Role: "admin", Key: pinnedKey})
}

// startSystemWithKeys is startSystem with the given API keys.
func startSystemWithKeys(t *testing.T, models string, partitions int, keys ...auth.APIKeyConfig) *partitionedSystem {
	t.Helper()
	st := alltest.Start(t, alltest.Options{Models: models, Partitions: partitions, Keys: keys})
	return &partitionedSystem{log: st.Log, stores: st.Stores, clients: clients{
		control: st.Control, tasks: st.Tasks, routing: st.Routing, permission: st.Permission, evidence: st.Evidence,
	}}
}

const pinnedKey = "k-acme-0123456789"

// render is what a client can see of an error, in a stable text form.
// RetryInfo is rendered by presence only: its delay depends on the clock.
func render(err error) string {
	if err == nil {
		return "<nil>"
	}
	st := status.Convert(err)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q", st.Code(), st.Message())
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				fmt.Fprintf(&b, " field[%s: %s]", v.GetField(), v.GetDescription())
			}
		case *errdetails.ErrorInfo:
			keys := make([]string, 0, len(d.GetMetadata()))
			for k := range d.GetMetadata() {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var meta []string
			for _, k := range keys {
				meta = append(meta, k+"="+d.GetMetadata()[k])
			}
			fmt.Fprintf(&b, " info[%s@%s {%s}]", d.GetReason(), d.GetDomain(), strings.Join(meta, ","))
		case *errdetails.PreconditionFailure:
			for _, v := range d.GetViolations() {
				fmt.Fprintf(&b, " precondition[%s %s: %s]", v.GetType(), v.GetSubject(), v.GetDescription())
			}
		case *errdetails.ResourceInfo:
			fmt.Fprintf(&b, " resource[%s %s: %s]", d.GetResourceType(), d.GetResourceName(), d.GetDescription())
		case *errdetails.RetryInfo:
			b.WriteString(" retry")
		default:
			fmt.Fprintf(&b, " detail[%T]", d)
		}
	}
	return b.String()
}

func TestPinnedErrors(t *testing.T) {
	c := startAll(t)
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+pinnedKey), 60*time.Second)
	defer cancel()
	text := []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hi"}}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Setup: one turn in control, one task, one pending permission request,
	// one benchmark dataset.
	sub, err := c.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1", Input: text})
	must(err)
	turn := sub.GetTurn().GetTurnId()
	_, err = c.control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: "s1", ThreadId: "th1", MinSequence: sub.GetSequence()})
	must(err)
	task, err := c.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "task_pinned", Spec: &tasksv1.TaskSpec{Title: "pinned"}})
	must(err)
	_, err = c.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "task_open", Spec: &tasksv1.TaskSpec{Title: "open"}})
	must(err)
	_, err = c.tasks.CancelTask(ctx, &tasksv1.CancelTaskRequest{TaskId: task.GetTask().GetTaskId(), Reason: "pinned"})
	must(err)
	mode, err := c.permission.SetPermissionMode(ctx, &permissionv1.SetPermissionModeRequest{
		Scope: &permissionv1.PolicyScope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionId: "s1"},
		Mode:  eventsv1.PermissionMode_PERMISSION_MODE_UNTRUSTED, Interactive: true})
	must(err)
	asked, err := c.permission.EvaluatePermission(ctx, &permissionv1.EvaluatePermissionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn, StepId: "step_1", ToolCallId: "call_1",
		Target: eventsv1.TargetKind_TARGET_KIND_TOOL, Name: "shell", Access: eventsv1.Access_ACCESS_EXECUTE, Command: "npm install left-pad",
		MinSequence: mode.GetWrite().GetSequence(), ApprovalTimeout: durationpb.New(time.Minute)})
	must(err)
	action := asked.GetEvaluation().GetApprovalActionId()
	if action == "" {
		t.Fatalf("no approval asked: %v", asked)
	}
	dataset := func() *eventsv1.BenchmarkDatasetResolved {
		return &eventsv1.BenchmarkDatasetResolved{DatasetId: "ds", DatasetVersion: "v1", DatasetRef: "benchmarks/ds", SelectionPolicy: "all",
			FrozenAt: timestamppb.New(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)), TaskIds: []string{"t1"}}
	}
	_, err = c.evidence.RecordBenchmarkDataset(ctx, &evidencev1.RecordBenchmarkDatasetRequest{SessionId: "s1", Dataset: dataset()})
	must(err)
	_, err = c.routing.ConsumeLimits(ctx, &routingv1.ConsumeLimitsRequest{Scope: &routingv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: "turn1"}, ModelId: "gpt-5-4"})
	must(err)

	cases := []struct {
		name string
		call func() error
		want string
	}{
		// control
		{"control/invalid", func() error {
			_, err := c.control.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "session.created", TurnId: turn}}})
			return err
		}, `InvalidArgument "invalid request: events[0].type: \"session.created\" is not a fact workers report (model, reasoning, tool, process, output, context, history, artifact.changed, run.status, turn lifecycle, subagent results)" field[events[0].type: "session.created" is not a fact workers report (model, reasoning, tool, process, output, context, history, artifact.changed, run.status, turn lifecycle, subagent results)]`},
		{"control/not found", func() error {
			_, err := c.control.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "nope"})
			return err
		}, `NotFound "session \"nope\" not found" resource[session nope: ]`},
		{"control/already exists", func() error {
			_, err := c.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s2", ThreadId: "th1", Input: text})
			return err
		}, `AlreadyExists "thread \"th1\" already exists: thread th1 belongs to another session" resource[thread th1: thread th1 belongs to another session]`},
		{"control/failed precondition", func() error {
			_, err := c.control.PromoteQueuedTurn(ctx, &controlv1.PromoteQueuedTurnRequest{SessionId: "s1", ThreadId: "th1", QueuedTurnId: turn})
			return err
		}, `FailedPrecondition "turn <turn> is not in the queue of thread th1" precondition[TURN_NOT_QUEUED turn/<turn>: turn <turn> is not in the queue of thread th1] info[TURN_NOT_QUEUED@agentruntime.dev {}]`},
		// tasks
		{"tasks/invalid", func() error {
			_, err := c.tasks.CreateJob(ctx, &tasksv1.CreateJobRequest{TaskId: "task_open", Spec: &tasksv1.JobSpec{}, Items: []*tasksv1.JobItemInput{{ItemId: "x"}, {ItemId: "x"}}})
			return err
		}, `InvalidArgument "invalid request: items[1].item_id: item id \"x\" is used twice" field[items[1].item_id: item id "x" is used twice]`},
		{"tasks/not found", func() error {
			_, err := c.tasks.GetTask(ctx, &tasksv1.GetTaskRequest{TaskId: "task_nope"})
			return err
		}, `NotFound "task \"task_nope\" not found" resource[task task_nope: ]`},
		{"tasks/already exists", func() error {
			_, err := c.tasks.CreateTask(ctx, &tasksv1.CreateTaskRequest{TaskId: "task_pinned", Spec: &tasksv1.TaskSpec{Title: "other"}})
			return err
		}, `AlreadyExists "task \"task_pinned\" already exists: a task with this id exists" resource[task task_pinned: a task with this id exists]`},
		{"tasks/failed precondition", func() error {
			_, err := c.tasks.PauseTask(ctx, &tasksv1.PauseTaskRequest{TaskId: "task_pinned"})
			return err
		}, `FailedPrecondition "task is cancelled; pause needs accepted, queued, blocked, retrying, preparing, running, waiting_input, waiting_permission or waiting_resource" precondition[ILLEGAL_TRANSITION task/task_pinned: task is cancelled; pause needs accepted, queued, blocked, retrying, preparing, running, waiting_input, waiting_permission or waiting_resource] info[ILLEGAL_TRANSITION@agentruntime.dev {allowed=accepted,blocked,preparing,queued,retrying,running,waiting_input,waiting_permission,waiting_resource,command=pause,status=cancelled}]`},
		// routing
		{"routing/invalid", func() error {
			_, err := c.routing.RecordCost(ctx, &routingv1.RecordCostRequest{Scope: &routingv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: "turn1"}, UsageId: "u1", ModelId: "gpt-5-4", Usage: &routingv1.Usage{OutputTokens: 1 << 62}})
			return err
		}, `InvalidArgument "invalid request: usage.output_tokens: 4611686018427387904 is outside 0..1000000000000" field[usage.output_tokens: 4611686018427387904 is outside 0..1000000000000]`},
		{"routing/not found", func() error {
			_, err := c.routing.RecordCost(ctx, &routingv1.RecordCostRequest{Scope: &routingv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: "turn1"}, UsageId: "u1", ModelId: "nope", Usage: &routingv1.Usage{InputTokens: 1}})
			return err
		}, `NotFound "model \"nope\" not found" resource[model nope: ]`},
		{"routing/failed precondition", func() error {
			_, err := c.routing.RecordCost(ctx, &routingv1.RecordCostRequest{Scope: &routingv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: "turn1"}, UsageId: "u1", ModelId: "unpriced", Usage: &routingv1.Usage{InputTokens: 10}})
			return err
		}, `FailedPrecondition "model \"unpriced\" has no input price in the registry; 10 input tokens cannot be priced" precondition[PRICE_MISSING model/unpriced: model "unpriced" has no input price in the registry; 10 input tokens cannot be priced] info[PRICE_MISSING@agentruntime.dev {component=input,model_id=unpriced}]`},
		{"routing/resource exhausted", func() error {
			_, err := c.routing.ConsumeLimits(ctx, &routingv1.ConsumeLimitsRequest{Scope: &routingv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: "turn1"}, ModelId: "gpt-5-4"})
			return err
		}, `ResourceExhausted "rate limit \"gpt-rpm\" (1 requests per minute) refuses 1 more for model \"gpt-5-4\"; retry after <delay>" info[RATE_LIMITED@agentruntime.dev {dimension=requests,limit_id=gpt-rpm,model_id=gpt-5-4}] retry`},
		// permission
		{"permission/invalid", func() error {
			_, err := c.permission.ReportExecutionEnvironment(ctx, &permissionv1.ReportExecutionEnvironmentRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn, AdditionalRoots: []string{"rel"}})
			return err
		}, `InvalidArgument "invalid request: additional_roots: path cannot be checked: root \"rel\" is not absolute" field[additional_roots: path cannot be checked: root "rel" is not absolute]`},
		{"permission/not found", func() error {
			_, err := c.permission.GetExecutionEnvironment(ctx, &permissionv1.GetExecutionEnvironmentRequest{SessionId: "s1", TurnId: "turn_nope"})
			return err
		}, `NotFound "execution environment of turn \"turn_nope\" not found" resource[execution environment of turn turn_nope: ]`},
		{"permission/already exists", func() error {
			hook := func(url string) *eventsv1.Hook {
				return &eventsv1.Hook{HookId: "pinned", Point: eventsv1.HookPoint_HOOK_POINT_STOP, Handler: &eventsv1.Hook_HttpUrl{HttpUrl: url}}
			}
			if _, err := c.permission.RegisterHook(ctx, &permissionv1.RegisterHookRequest{Hook: hook("http://127.0.0.1:1/a")}); err != nil {
				return err
			}
			return eventuallyErr(func() error {
				_, err := c.permission.RegisterHook(ctx, &permissionv1.RegisterHookRequest{Hook: hook("http://127.0.0.1:1/b")})
				return err
			})
		}, `AlreadyExists "hook \"pinned\" already exists: registered with other settings; remove it first or use another id" resource[hook pinned: registered with other settings; remove it first or use another id]`},
		{"permission/invalid answer", func() error {
			return eventuallyErr(func() error {
				_, err := c.permission.ResolvePermission(ctx, &permissionv1.ResolvePermissionRequest{SessionId: "s1", ActionId: action, Decision: "maybe"})
				return err
			}, "NotFound")
		}, `InvalidArgument "invalid request: decision: must be in list [allow_once, allow_session, deny]" field[decision: must be in list [allow_once, allow_session, deny]]`},
		{"permission/failed precondition", func() error {
			if _, err := c.permission.ResolvePermission(ctx, &permissionv1.ResolvePermissionRequest{SessionId: "s1", ActionId: action, Decision: "deny"}); err != nil {
				return err
			}
			return eventuallyErr(func() error {
				_, err := c.permission.ResolvePermission(ctx, &permissionv1.ResolvePermissionRequest{SessionId: "s1", ActionId: action, Decision: "allow_once"})
				return err
			})
		}, `FailedPrecondition "the permission request is already denied; only a pending request can be resolved" precondition[PERMISSION_ALREADY_RESOLVED permission request: the permission request is already denied; only a pending request can be resolved] info[PERMISSION_ALREADY_RESOLVED@agentruntime.dev {state=denied}]`},
		// evidence
		{"evidence/invalid", func() error {
			_, err := c.evidence.RecordBenchmarkDataset(ctx, &evidencev1.RecordBenchmarkDatasetRequest{SessionId: "s1", Dataset: &eventsv1.BenchmarkDatasetResolved{DatasetId: "d"}})
			return err
		}, `InvalidArgument "invalid request: dataset.dataset_version: required: a dataset is resolved to a frozen version" field[dataset.dataset_version: required: a dataset is resolved to a frozen version]`},
		{"evidence/not found", func() error {
			_, err := c.evidence.RecordBenchmarkReward(ctx, &evidencev1.RecordBenchmarkRewardRequest{SessionId: "s1", TrialId: "nope", Value: 1})
			return err
		}, `NotFound "benchmark trial \"trial not found\" not found" resource[benchmark trial trial not found: ]`},
		{"evidence/failed precondition", func() error {
			changed := dataset()
			changed.TaskIds = append(changed.TaskIds, "smuggled")
			_, err := c.evidence.RecordBenchmarkDataset(ctx, &evidencev1.RecordBenchmarkDatasetRequest{SessionId: "s1", Dataset: changed})
			return err
		}, `FailedPrecondition "dataset version already recorded with other facts: ds version v1" precondition[DATASET_CONFLICT dataset.dataset_version: dataset version already recorded with other facts: ds version v1] info[DATASET_CONFLICT@agentruntime.dev {}]`},
	}
	for _, tc := range cases {
		got := render(tc.call())
		got = strings.ReplaceAll(got, turn, "<turn>")
		got = strings.ReplaceAll(got, action, "<action>")
		got = retryAfter.ReplaceAllString(got, "retry after <delay>")
		if got != tc.want {
			t.Errorf("%s:\n got  %s\n want %s", tc.name, got, tc.want)
		}
	}
}

var retryAfter = regexp.MustCompile(`retry after [0-9.]+m?s`)

// eventuallyErr calls until the error is no longer one of the codes that
// mean "not projected yet" (by default none but NotFound), bounded by a
// deadline.
func eventuallyErr(call func() error, notYet ...string) error {
	if len(notYet) == 0 {
		notYet = []string{"NotFound", "OK"}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := call()
		code := status.Code(err).String()
		pending := false
		for _, n := range notYet {
			pending = pending || code == n
		}
		if !pending || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond) // polling a projection; the deadline bounds it
	}
}
