package routing_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/natsembed"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/routing"
)

const registryYAML = `
providers:
  - {id: openai, credential_status: present, regions: [us]}
  - {id: anthropic, credential_status: present, regions: [us, eu]}
  - {id: local, credential_status: missing}
models:
  - id: gpt-5-4
    provider: openai
    capabilities: [tools, vision, structured_output]
    context_window: 400000
    prices_usd_per_million: {input: 1.25, output: 10}
    latency: standard
  - id: claude-fast
    provider: anthropic
    capabilities: [tools]
    context_window: 200000
    prices_usd_per_million: {input: 0.8, output: 4}
    latency: fast
  - id: unpriced
    provider: anthropic
    capabilities: [tools]
    latency: fast
  - id: llama
    provider: local
    capabilities: [tools]
    prices_usd_per_million: {input: 0, output: 0}
rate_limits:
  - {id: gpt-rpm, model: gpt-5-4, requests_per_minute: 2}
quotas:
  - {id: daily, tokens_per_day: 1000, low_thresholds: [0.5]}
`

// tenantAuth takes the tenant from an "x-tenant" header, for tests that
// need two tenants.
type tenantAuth struct{}

func (tenantAuth) Authenticate(ctx context.Context) (auth.Principal, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	t := "t1"
	if v := md.Get("x-tenant"); len(v) > 0 {
		t = v[0]
	}
	return auth.Principal{Tenant: t, Subject: "tester", Role: auth.RoleAdmin}, nil
}

func start(t *testing.T, config string) rv1.RoutingServiceClient {
	t.Helper()
	return startOn(t, natstest.Server(t), config, true)
}

// startOn starts a routing process on the log of ns: its own connection,
// writer, read model and limit store, as a replica would be. Without its
// projector (projector false) its read model stays empty.
func startOn(t *testing.T, ns *natsembed.Server, config string, projector bool) rv1.RoutingServiceClient {
	t.Helper()
	return startPartitioned(t, ns, natstest.Partitions(t), config, projector, projection.NewMemory())
}

// startPartitioned is startOn on a log of partitions partitions (every
// process on one server must open it with the same count), with the read
// model in store (replicas may share one, as they share Redis).
func startPartitioned(t *testing.T, ns *natsembed.Server, partitions int, config string, projector bool, store projection.Store) rv1.RoutingServiceClient {
	t.Helper()
	var modelsFile string
	if config != "" {
		modelsFile = filepath.Join(t.TempDir(), "models.yaml")
		if err := os.WriteFile(modelsFile, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	nc := natstest.Connect(t, ns)
	log, err := eventlog.Open(ctx, nc, eventlog.Config{Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	svc := routing.New(kit.Deps{Log: log, Store: store, Config: kit.Config{ModelsFile: modelsFile}})
	done := make(chan error, 1)
	if projector {
		go func() { done <- svc.Run(ctx) }()
	} else {
		done <- nil
	}
	t.Cleanup(func() { cancel(); <-done })
	srv, err := server.New(server.Config{Authenticator: tenantAuth{}, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	svc.Register(srv.GRPC())
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(ctx, lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return rv1.NewRoutingServiceClient(conn)
}

func scope(turn string) *rv1.TurnScope {
	return &rv1.TurnScope{SessionId: "s1", ThreadId: "th1", TurnId: turn, TaskId: "task1", RunId: "run1"}
}

func code(t *testing.T, err error, want codes.Code) *status.Status {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != want {
		t.Fatalf("got %v (%v), want %v", st.Code(), err, want)
	}
	return st
}

func TestSingleCandidateAndSummary(t *testing.T) {
	c := start(t, registryYAML)
	ctx := context.Background()
	// Vision is offered only by gpt-5-4: a single candidate.
	if _, err := c.ResolveTaskProfile(ctx, &rv1.ResolveTaskProfileRequest{Scope: &rv1.ProfileScope{SessionId: "s1", ThreadId: "th1", TurnId: "turn1", TaskId: "task1"}, Kind: "vision"}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: scope("turn1"), Route: &rv1.RouteRequest{EstimatedInputTokens: 1000, EstimatedOutputTokens: 100}})
	if err != nil {
		t.Fatal(err)
	}
	d := resp.GetDecision()
	if d.GetSelectedModelId() != "gpt-5-4" || d.GetCandidateCount() != 1 || d.GetRoutingMode() != eventsv1.RoutingMode_ROUTING_MODE_SINGLE_CANDIDATE {
		t.Fatalf("decision %v", d)
	}
	if d.GetEstimatedCostNanos() != 2_250_000 || len(d.GetLimitStateSnapshot().GetLimits()) == 0 || len(d.GetCapabilityGap()) != 0 {
		t.Fatalf("single candidate facts missing: %v", d)
	}
	if n := len(resp.GetCandidateSet().GetExcluded()); n != 3 {
		t.Fatalf("%d excluded, want 3: %v", n, resp.GetCandidateSet())
	}
	sum, err := c.GetRoutingLimitSummary(ctx, &rv1.GetRoutingLimitSummaryRequest{SessionId: "s1", MinSequence: resp.GetWrite().GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	th := sum.GetThreads()[0]
	if !th.GetSingleCandidate() || th.GetCandidateCount() != 1 || th.GetDecision().GetDecisionReason() == "" ||
		th.GetTaskProfile().GetKind() != "vision" || th.GetCost() == nil || th.GetQuotaState().String() != "FACT_STATE_UNKNOWN" {
		t.Fatalf("summary %v", th)
	}
	// Another tenant sees nothing of it.
	other := metadata.AppendToOutgoingContext(ctx, "x-tenant", "t2")
	_, err = c.GetRoutingLimitSummary(other, &rv1.GetRoutingLimitSummaryRequest{SessionId: "s1"})
	code(t, err, codes.NotFound)
}

func TestNoCandidateNamesEveryExcludedModel(t *testing.T) {
	c := start(t, registryYAML)
	ctx := context.Background()
	resp, err := c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: scope("turn1"), Route: &rv1.RouteRequest{
		Profile: &eventsv1.TaskProfile{Kind: "reasoning", RequiredCapabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_REASONING}}}})
	if err != nil {
		t.Fatal(err)
	}
	np := resp.GetNotPossible()
	if np == nil || len(np.GetExcluded()) != 4 {
		t.Fatalf("want routing.not_possible naming 4 models, got %v", resp)
	}
	for _, m := range []string{"gpt-5-4", "claude-fast", "unpriced", "llama"} {
		if !contains(np.GetReason(), m) {
			t.Fatalf("reason %q does not name %s", np.GetReason(), m)
		}
	}
	// An empty registry is valid: not possible, saying why.
	c2 := start(t, "")
	resp, err = c2.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: scope("turn1"), Route: &rv1.RouteRequest{Profile: &eventsv1.TaskProfile{Kind: "chat"}}})
	if err != nil || !contains(resp.GetNotPossible().GetReason(), "registry is empty") {
		t.Fatalf("%v, %v", resp, err)
	}
}

func TestFallbackAfterProviderFailure(t *testing.T) {
	c := start(t, registryYAML)
	ctx := context.Background()
	resp, err := c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: scope("turn1"), Route: &rv1.RouteRequest{
		Profile:          &eventsv1.TaskProfile{Kind: "coding", RequiredCapabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS}, FallbackPolicy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE},
		RequestedModelId: "gpt-5-4"}})
	if err != nil {
		t.Fatal(err)
	}
	d := resp.GetDecision()
	if d.GetSelectedModelId() != "gpt-5-4" || d.GetRoutingMode() != eventsv1.RoutingMode_ROUTING_MODE_REQUESTED || len(d.GetFallbackChain()) == 0 {
		t.Fatalf("decision %v", d)
	}
	_, err = c.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: scope("turn1"), FailedModelId: "claude-fast", FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT})
	code(t, err, codes.FailedPrecondition)
	fb, err := c.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: scope("turn1"), FailedModelId: "gpt-5-4", FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_OVERLOADED})
	if err != nil {
		t.Fatal(err)
	}
	f := fb.GetFallback()
	if f.GetDecision().GetSelectedModelId() != d.GetFallbackChain()[0][len("anthropic/"):] || f.GetFailureCategory() != eventsv1.FailureCategory_FAILURE_CATEGORY_OVERLOADED || f.GetFallbackCount() != 1 {
		t.Fatalf("fallback %v (chain %v)", f, d.GetFallbackChain())
	}
	// Walk the chain to its end: then routing.not_possible, not an error.
	next := f.GetDecision().GetSelectedModelId()
	for range 3 {
		fb, err = c.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: scope("turn1"), FailedModelId: next, FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_SERVER_ERROR})
		if err != nil {
			t.Fatal(err)
		}
		if fb.GetNotPossible() != nil {
			break
		}
		next = fb.GetFallback().GetDecision().GetSelectedModelId()
	}
	if fb.GetNotPossible() == nil || fb.GetNotPossible().GetStage() != "fallback" {
		t.Fatalf("end of chain: %v", fb)
	}
	sum, err := c.GetRoutingLimitSummary(ctx, &rv1.GetRoutingLimitSummaryRequest{SessionId: "s1", ThreadId: "th1", MinSequence: fb.GetWrite().GetSequence()})
	if err != nil || sum.GetThreads()[0].GetFallbackCount() < 1 || sum.GetThreads()[0].GetNotPossible() == nil {
		t.Fatalf("summary %v, %v", sum, err)
	}
}

func TestQuotaAndRateLimit(t *testing.T) {
	c := start(t, registryYAML)
	ctx := context.Background()
	for range 2 {
		if _, err := c.ConsumeLimits(ctx, &rv1.ConsumeLimitsRequest{Scope: scope("turn1"), ModelId: "gpt-5-4"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.ConsumeLimits(ctx, &rv1.ConsumeLimitsRequest{Scope: scope("turn1"), ModelId: "gpt-5-4"})
	st := code(t, err, codes.ResourceExhausted)
	if !hasRetry(st) {
		t.Fatalf("no RetryInfo in %v", st.Details())
	}
	// 600 of 1000 tokens: quota.low at 0.5; then 500 more: quota.blocked.
	rec, err := c.RecordCost(ctx, &rv1.RecordCostRequest{Scope: scope("turn1"), UsageId: "u1", ModelId: "claude-fast", Usage: &rv1.Usage{InputTokens: 500, OutputTokens: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if rec.GetRecorded().GetCost().GetTotalNanos() != 800_000 && rec.GetRecorded().GetCost().GetTotalNanos() != 400_000+400_000 {
		t.Fatalf("cost %v", rec.GetRecorded().GetCost())
	}
	if len(rec.GetWrite().GetEventIds()) != 2 {
		t.Fatalf("want cost.recorded and quota.low, got %v", rec.GetWrite())
	}
	again, err := c.RecordCost(ctx, &rv1.RecordCostRequest{Scope: scope("turn1"), UsageId: "u1", ModelId: "claude-fast", Usage: &rv1.Usage{InputTokens: 500, OutputTokens: 100}})
	if err != nil || !again.GetWrite().GetDeduplicated() {
		t.Fatalf("retried usage: %v, %v; want deduplicated", again.GetWrite(), err)
	}
	rec, err = c.RecordCost(ctx, &rv1.RecordCostRequest{Scope: scope("turn1"), UsageId: "u2", ModelId: "claude-fast", Usage: &rv1.Usage{InputTokens: 500}})
	if err != nil || len(rec.GetWrite().GetEventIds()) != 2 {
		t.Fatalf("want cost.recorded and quota.blocked: %v, %v", rec, err)
	}
	_, err = c.ConsumeLimits(ctx, &rv1.ConsumeLimitsRequest{Scope: scope("turn1"), ModelId: "claude-fast"})
	code(t, err, codes.ResourceExhausted)
	sum, err := c.GetRoutingLimitSummary(ctx, &rv1.GetRoutingLimitSummaryRequest{SessionId: "s1", MinSequence: rec.GetWrite().GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	th := sum.GetThreads()[0]
	if th.GetQuotaState().String() != "FACT_STATE_BLOCKED" || th.GetRateLimitState().String() != "FACT_STATE_KNOWN" ||
		th.GetCost().GetRecordedNanos() != 1_200_000 || th.GetLastQuotaLow() == nil {
		t.Fatalf("summary %v", th)
	}
	// With the quota exhausted, routing excludes every model for it.
	resp, err := c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: scope("turn2"), Route: &rv1.RouteRequest{Profile: &eventsv1.TaskProfile{Kind: "chat"}}})
	if err != nil || resp.GetNotPossible() == nil || !contains(resp.GetNotPossible().GetReason(), "quota_exhausted") {
		t.Fatalf("%v, %v", resp, err)
	}
}

func TestBadInputRecordsNothing(t *testing.T) {
	c := start(t, registryYAML)
	ctx := context.Background()
	_, err := c.RecordCost(ctx, &rv1.RecordCostRequest{Scope: scope("turn1"), UsageId: "u1", ModelId: "nope", Usage: &rv1.Usage{InputTokens: 1}})
	code(t, err, codes.NotFound)
	_, err = c.RecordCost(ctx, &rv1.RecordCostRequest{Scope: scope("turn1"), UsageId: "u1", ModelId: "gpt-5-4", Usage: &rv1.Usage{InputTokens: -1}})
	st := code(t, err, codes.InvalidArgument)
	if !contains(st.Message(), "usage.input_tokens") {
		t.Fatalf("%v does not name the field", st.Message())
	}
	_, err = c.RecordCost(ctx, &rv1.RecordCostRequest{Scope: scope("turn1"), UsageId: "u1", ModelId: "unpriced", Usage: &rv1.Usage{InputTokens: 10}})
	st = code(t, err, codes.FailedPrecondition)
	if !contains(st.Message(), "unpriced") || !contains(st.Message(), "input") {
		t.Fatalf("%v", st.Message())
	}
	_, err = c.EstimateCost(ctx, &rv1.EstimateCostRequest{Scope: scope("turn1"), ModelId: "nope", Usage: &rv1.Usage{}})
	code(t, err, codes.NotFound)
	// A usage too large to price exactly is refused, never recorded as a
	// wrapped-around (negative) cost.
	_, err = c.RecordCost(ctx, &rv1.RecordCostRequest{Scope: scope("turn1"), UsageId: "u1", ModelId: "gpt-5-4", Usage: &rv1.Usage{OutputTokens: 1 << 62}})
	if st := code(t, err, codes.InvalidArgument); !contains(st.Message(), "usage.output_tokens") {
		t.Fatalf("%v does not name the field", st.Message())
	}
	_, err = c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: scope("turn1"), Route: &rv1.RouteRequest{Profile: &eventsv1.TaskProfile{Kind: "chat"}, EstimatedInputTokens: 1 << 62}})
	if st := code(t, err, codes.InvalidArgument); !contains(st.Message(), "route.estimated_input_tokens") {
		t.Fatalf("%v does not name the field", st.Message())
	}
	_, err = c.GetRoutingLimitSummary(ctx, &rv1.GetRoutingLimitSummaryRequest{SessionId: "s1"})
	code(t, err, codes.NotFound) // nothing was recorded for the session
	_, err = c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: &rv1.TurnScope{SessionId: "s1", ThreadId: "th1"}})
	code(t, err, codes.InvalidArgument)
	_, err = c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: scope("turn9")})
	code(t, err, codes.FailedPrecondition)
}

func TestRegistryChangesAreFacts(t *testing.T) {
	c := start(t, registryYAML)
	ctx := context.Background()
	up, err := c.UpdateModelRegistry(ctx, &rv1.UpdateModelRegistryRequest{Changes: []*rv1.ModelRegistryChange{
		{Change: &rv1.ModelRegistryChange_UpsertModel{UpsertModel: &eventsv1.Model{Id: "o-reason", ProviderId: "openai", Capabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_REASONING}}}},
	}})
	if err != nil || len(up.GetWrite().GetEventIds()) != 1 {
		t.Fatalf("%v, %v", up, err)
	}
	_, err = c.UpdateModelRegistry(ctx, &rv1.UpdateModelRegistryRequest{Changes: []*rv1.ModelRegistryChange{
		{Change: &rv1.ModelRegistryChange_UpsertModel{UpsertModel: &eventsv1.Model{Id: "x", ProviderId: "nobody"}}},
	}})
	st := code(t, err, codes.InvalidArgument)
	var br *errdetails.BadRequest
	for _, d := range st.Details() {
		if b, ok := d.(*errdetails.BadRequest); ok {
			br = b
		}
	}
	if br == nil || br.GetFieldViolations()[0].GetField() != "changes[0].model.provider_id" {
		t.Fatalf("details %v", st.Details())
	}
	_, err = c.UpdateModelRegistry(ctx, &rv1.UpdateModelRegistryRequest{Changes: []*rv1.ModelRegistryChange{{Change: &rv1.ModelRegistryChange_RemoveModel{RemoveModel: "nope"}}}})
	code(t, err, codes.NotFound)
	reg, err := c.GetModelRegistry(ctx, &rv1.GetModelRegistryRequest{MinSequence: up.GetWrite().GetSequence()})
	if err != nil || len(reg.GetRegistry().GetModels()) != 5 || reg.GetRegistry().GetConfigDigest() == "" {
		t.Fatalf("%v, %v", reg, err)
	}
	// Another tenant has the config registry only, not t1's change.
	other := metadata.AppendToOutgoingContext(ctx, "x-tenant", "t2")
	reg, err = c.GetModelRegistry(other, &rv1.GetModelRegistryRequest{})
	if err != nil || len(reg.GetRegistry().GetModels()) != 4 {
		t.Fatalf("%v, %v", reg, err)
	}
}

func hasRetry(st *status.Status) bool {
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok && r.GetRetryDelay().AsDuration() > 0 {
			return true
		}
	}
	return false
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0))
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestRetriedFallbackReplaysTheEarlierOutcome(t *testing.T) {
	c := start(t, registryYAML)
	ctx := context.Background()
	coding := &eventsv1.TaskProfile{Kind: "coding", RequiredCapabilities: []eventsv1.Capability{eventsv1.Capability_CAPABILITY_TOOLS}, FallbackPolicy: eventsv1.FallbackPolicy_FALLBACK_POLICY_NEXT_CANDIDATE}
	if _, err := c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: scope("turn1"), Route: &rv1.RouteRequest{Profile: coding, RequestedModelId: "gpt-5-4"}}); err != nil {
		t.Fatal(err)
	}
	report := func(model string, cat eventsv1.FailureCategory) *rv1.ApplyFallbackResponse {
		t.Helper()
		r, err := c.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: scope("turn1"), FailedModelId: model, FailureCategory: cat})
		if err != nil {
			t.Fatalf("fallback after %s: %v", model, err)
		}
		return r
	}
	same := func(what string, got, first *rv1.ApplyFallbackResponse) {
		t.Helper()
		if !proto.Equal(got.GetFallback(), first.GetFallback()) || !proto.Equal(got.GetNotPossible(), first.GetNotPossible()) {
			t.Fatalf("%s: outcome %v, want the earlier %v", what, got, first)
		}
		w, fw := got.GetWrite(), first.GetWrite()
		if !w.GetDeduplicated() || w.GetSequence() != fw.GetSequence() || !slices.Equal(w.GetEventIds(), fw.GetEventIds()) {
			t.Fatalf("%s: write %v, want deduplicated %v", what, w, fw)
		}
	}
	first := report("gpt-5-4", eventsv1.FailureCategory_FAILURE_CATEGORY_OVERLOADED)
	if first.GetFallback().GetDecision().GetSelectedModelId() != "claude-fast" || first.GetWrite().GetDeduplicated() {
		t.Fatalf("first fallback %v", first)
	}
	// The worker did not see the answer and reports again (even with
	// another category): the same fallback, nothing appended.
	same("retry", report("gpt-5-4", eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT), first)
	second := report("claude-fast", eventsv1.FailureCategory_FAILURE_CATEGORY_SERVER_ERROR)
	if second.GetFallback().GetDecision().GetSelectedModelId() != "unpriced" || second.GetFallback().GetFallbackCount() != 2 {
		t.Fatalf("second fallback %v", second)
	}
	// A late retry of the first report does not move the turn again.
	same("late retry", report("gpt-5-4", eventsv1.FailureCategory_FAILURE_CATEGORY_OVERLOADED), first)
	// The end of the chain: not possible, and its retry replays that too.
	last := report("unpriced", eventsv1.FailureCategory_FAILURE_CATEGORY_SERVER_ERROR)
	if last.GetNotPossible().GetStage() != "fallback" {
		t.Fatalf("end of chain %v", last)
	}
	same("retry after not possible", report("unpriced", eventsv1.FailureCategory_FAILURE_CATEGORY_SERVER_ERROR), last)
	// A model that never served the turn is still not its current model.
	_, err := c.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: scope("turn1"), FailedModelId: "llama", FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT})
	if st := code(t, err, codes.FailedPrecondition); !contains(st.Message(), "not \"llama\"") {
		t.Fatalf("%v", st.Message())
	}
	sum, err := c.GetRoutingLimitSummary(ctx, &rv1.GetRoutingLimitSummaryRequest{SessionId: "s1", ThreadId: "th1", MinSequence: last.GetWrite().GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	th := sum.GetThreads()[0]
	// The retries appended nothing: the thread's last fact is the not_possible.
	if th.GetLastSequence() != last.GetWrite().GetSequence() || th.GetFallbackCount() != 2 ||
		!slices.Equal(th.GetFailedModelIds(), []string{"gpt-5-4", "claude-fast", "unpriced"}) {
		t.Fatalf("summary %v", th)
	}
	// A new decision in the turn keeps every failed model out, including
	// the one nothing could replace.
	again, err := c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: scope("turn1"), Route: &rv1.RouteRequest{Profile: coding}})
	if err != nil || again.GetNotPossible() == nil {
		t.Fatalf("%v, %v", again, err)
	}
	for _, x := range again.GetNotPossible().GetExcluded() {
		if x.GetModelId() != "llama" && !slices.Contains(x.GetReasons(), eventsv1.ExclusionReason_EXCLUSION_REASON_PROVIDER_FAILED) {
			t.Fatalf("%s excluded for %v, want provider_failed among them", x.GetModelId(), x.GetReasons())
		}
	}
}

func TestConcurrentFallbackReportsMoveTheTurnOnce(t *testing.T) {
	c := start(t, registryYAML)
	ctx := context.Background()
	sc := &rv1.TurnScope{SessionId: "s1", ThreadId: "th2", TurnId: "turn1"}
	if _, err := c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: sc, Route: &rv1.RouteRequest{Profile: &eventsv1.TaskProfile{Kind: "coding"}, RequestedModelId: "gpt-5-4"}}); err != nil {
		t.Fatal(err)
	}
	const workers = 8
	answers := make([]*rv1.ApplyFallbackResponse, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			answers[i], errs[i] = c.ApplyFallback(ctx, &rv1.ApplyFallbackRequest{Scope: sc, FailedModelId: "gpt-5-4", FailureCategory: eventsv1.FailureCategory_FAILURE_CATEGORY_TIMEOUT})
		})
	}
	wg.Wait()
	appended := 0
	for i := range workers {
		if errs[i] != nil {
			t.Fatalf("report %d: %v", i, errs[i])
		}
		if !answers[i].GetWrite().GetDeduplicated() {
			appended++
		}
		if !proto.Equal(answers[i].GetFallback(), answers[0].GetFallback()) || !slices.Equal(answers[i].GetWrite().GetEventIds(), answers[0].GetWrite().GetEventIds()) {
			t.Fatalf("answers differ: %v vs %v", answers[i], answers[0])
		}
	}
	if appended != 1 || answers[0].GetFallback().GetFallbackCount() != 1 {
		t.Fatalf("%d reports appended a fallback (want 1): %v", appended, answers[0])
	}
}

// Limits are evaluated on the registry held in process; a change to it is
// seen as soon as the routing projector has applied it.
func TestLimitsFollowRegistryChanges(t *testing.T) {
	c := start(t, registryYAML)
	ctx := context.Background()
	check := func() error {
		_, err := c.CheckLimits(ctx, &rv1.CheckLimitsRequest{ModelId: "o-new", Requests: 1})
		return err
	}
	code(t, check(), codes.NotFound) // the registry is now held
	eventually := func(want codes.Code) {
		t.Helper()
		require.Eventually(t, func() bool { return status.Code(check()) == want }, 10*time.Second, 2*time.Millisecond,
			"CheckLimits never answered %v", want)
	}
	if _, err := c.UpdateModelRegistry(ctx, &rv1.UpdateModelRegistryRequest{Changes: []*rv1.ModelRegistryChange{
		{Change: &rv1.ModelRegistryChange_UpsertModel{UpsertModel: &eventsv1.Model{Id: "o-new", ProviderId: "openai"}}},
	}}); err != nil {
		t.Fatal(err)
	}
	eventually(codes.OK)
	if _, err := c.UpdateModelRegistry(ctx, &rv1.UpdateModelRegistryRequest{Changes: []*rv1.ModelRegistryChange{
		{Change: &rv1.ModelRegistryChange_RemoveModel{RemoveModel: "o-new"}},
	}}); err != nil {
		t.Fatal(err)
	}
	eventually(codes.NotFound)
}

// A model with a rate limit is charged its quotas only: the answer's
// snapshot holds the quotas (it used to index the rate limits the charge
// did not return, and the call panicked).
func TestRecordCostOnARateLimitedModel(t *testing.T) {
	c := start(t, registryYAML)
	ctx := context.Background()
	rec, err := c.RecordCost(ctx, &rv1.RecordCostRequest{Scope: scope("turn1"), ModelId: "gpt-5-4", UsageId: "u1", Usage: &rv1.Usage{InputTokens: 100, OutputTokens: 10}})
	if err != nil {
		t.Fatal(err)
	}
	limits := rec.GetLimits().GetLimits()
	if len(limits) == 0 {
		t.Fatalf("no quota state in %v", rec)
	}
	for _, l := range limits {
		if l.GetKind() == "rate_limit" {
			t.Fatalf("a charge reported a rate limit: %v", l)
		}
	}
}
