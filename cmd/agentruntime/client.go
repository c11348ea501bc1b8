package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentruntime/agentruntime/pkg/config"
	"github.com/agentruntime/agentruntime/pkg/endpoints"
	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/fairshare"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// clientFlags reach a running runtime: one address for every service, or
// a per-service map over it (pkg/endpoints).
type clientFlags struct {
	addr      string
	endpoints string
	apiKey    string
	tls       bool
	tlsCA     string
	// tlsConfig, when set, is used instead of --tls and --tls-ca (the
	// in-process worker of dev, pinned to the server's certificate).
	tlsConfig *tls.Config
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", "127.0.0.1:"+DefaultPort, "the runtime's gRPC address: `agentruntime dev` or a front door serving every service; the services --endpoints does not name")
	fs.StringVar(&c.endpoints, "endpoints", "", "per-service addresses, e.g. control=HOST:PORT,tasks=...,routing=...,permission=...,evidence=... (services not named: --addr)")
	fs.StringVar(&c.apiKey, "api-key", "", "API key (sent as a bearer token); none for `agentruntime dev` without --auth")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS, verifying the server against the system's roots")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "connect with TLS, verifying the server against the CA certificates (PEM) in this file only; implies --tls")
}

// where is the endpoints map the flags say.
func (c *clientFlags) where() (endpoints.Map, error) {
	m, err := endpoints.Parse(c.endpoints, c.addr)
	if err != nil {
		return endpoints.Map{}, fmt.Errorf("--endpoints: %w", err)
	}
	return m, nil
}

func (c *clientFlags) dial(extra ...grpc.DialOption) (*endpoints.Conn, error) {
	where, err := c.where()
	if err != nil {
		return nil, err
	}
	tlsCfg := c.tlsConfig
	if tlsCfg == nil {
		if tlsCfg, err = clientTLS(c.tls, c.tlsCA); err != nil {
			return nil, err
		}
	}
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, extra...)
	if c.apiKey != "" {
		key := c.apiKey
		auth := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, o ...grpc.CallOption) error {
			return invoker(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key), method, req, reply, cc, o...)
		}
		stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, o ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key), desc, cc, method, o...)
		}
		opts = append(opts, grpc.WithUnaryInterceptor(auth), grpc.WithStreamInterceptor(stream))
	}
	return endpoints.Dial(where, opts...)
}

// parseArgs is parseFlags for commands that take positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := config.EnvDefault(fs); err != nil {
		return nil, err
	}
	if err := fs.Parse(args); err != nil {
		return nil, errUsage
	}
	return fs.Args(), nil
}

func rpcError(what string, err error) error {
	return fmt.Errorf("%s: %s", what, status.Convert(err).Message())
}

func runSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentruntime submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf              clientFlags
		session, thread string
		model           string
		priority        uint
		fairnessKey     string
	)
	cf.register(fs)
	fs.StringVar(&session, "session", "default", "session id (created when missing)")
	fs.StringVar(&thread, "thread", "main", "thread id (created when missing)")
	fs.StringVar(&model, "model", "", "ask routing for this model")
	fs.UintVar(&priority, "priority", 0, "claim priority, 1 (most urgent) to 5 (0: the default, 3)")
	fs.StringVar(&fairnessKey, "fairness-key", "", "share the turn is claimed under, e.g. an end user's id (default: the session)")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	objective := strings.TrimSpace(strings.Join(rest, " "))
	if objective == "" {
		fmt.Fprintln(stderr, `usage: agentruntime submit [flags] "objective"`)
		return errUsage
	}
	conn, err := cf.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	if priority > fairshare.LeastUrgent {
		fmt.Fprintf(stderr, "--priority %d: want 1 (most urgent) to 5, or 0 for the default 3\n", priority)
		return errUsage
	}
	req := &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: thread, Priority: uint32(priority), FairnessKey: fairnessKey,
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: objective}}}}
	if model != "" {
		req.Options = map[string]string{"model": model}
	}
	resp, err := controlv1.NewControlServiceClient(conn).SubmitTurn(ctx, req)
	if err != nil {
		return rpcError("submit", err)
	}
	t := resp.GetTurn()
	fmt.Fprintf(stdout, "turn %s %s in session %s, thread %s\n  watch it:  agentruntime watch --session %s\n", t.GetTurnId(), enums.Word(t.GetStatus()), session, thread, session)
	return nil
}

func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentruntime watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf              clientFlags
		session, thread string
		asJSON, until   bool
		from            uint64
	)
	cf.register(fs)
	fs.StringVar(&session, "session", "default", "session to watch")
	fs.StringVar(&thread, "thread", "", "only this thread")
	fs.BoolVar(&asJSON, "json", false, "one JSON event per line")
	fs.Uint64Var(&from, "from", 1, "start at this stream sequence (1: the whole history)")
	fs.BoolVar(&until, "until-turn-ends", false, "exit after the next turn.completed or turn.failed")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	conn, err := cf.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := controlv1.NewControlServiceClient(conn).SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: session, ThreadId: thread, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: from,
	})
	if err != nil {
		return rpcError("watch", err)
	}
	color := !asJSON && isTerminal(stdout)
	for {
		m, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return rpcError("watch", err)
		}
		if g := m.GetGap(); g != nil {
			fmt.Fprintf(stderr, "gap: events %d..%d are gone (retention)\n", g.GetRequestedSequence(), g.GetFirstAvailableSequence()-1)
		}
		ev := m.GetEvent()
		if ev == nil {
			continue
		}
		if asJSON {
			b, err := protojson.Marshal(ev)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, string(b))
		} else if line := describe(ev); line != "" {
			fmt.Fprintln(stdout, paint(color, ev.GetType(), fmt.Sprintf("%s #%-5d %-24s %s", ev.GetTimestamp().AsTime().Local().Format("15:04:05"), ev.GetSequence(), ev.GetType(), line)))
		}
		if until && (ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed") {
			return nil
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func paint(on bool, typ, s string) string {
	if !on {
		return s
	}
	code := "0"
	switch {
	case strings.HasSuffix(typ, ".failed") || strings.HasSuffix(typ, ".violation") || typ == "routing.not_possible":
		code = "31"
	case typ == "turn.completed" || typ == "tool.result":
		code = "32"
	case strings.HasPrefix(typ, "action.") || strings.HasPrefix(typ, "permission."):
		code = "33"
	case strings.HasSuffix(typ, ".delta"):
		code = "2"
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// describe is one readable line per fact; empty hides it.
func describe(ev *eventsv1.RuntimeEvent) string {
	one := func(s string) string { return clipLine(strings.ReplaceAll(s, "\n", " "), 140) }
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_TurnSubmitted:
		return fmt.Sprintf("%s %s: %q", ev.GetTurnId(), p.TurnSubmitted.GetAdmission(), one(inputText(p.TurnSubmitted.GetInput())))
	case *eventsv1.RuntimeEvent_TurnStarted:
		return fmt.Sprintf("%s by worker %s", ev.GetTurnId(), p.TurnStarted.GetWorkerId())
	case *eventsv1.RuntimeEvent_TurnCompleted:
		return fmt.Sprintf("%s: %s", ev.GetTurnId(), one(p.TurnCompleted.GetSummary()))
	case *eventsv1.RuntimeEvent_TurnFailed:
		return fmt.Sprintf("%s %s (%s): %s", ev.GetTurnId(), enums.Word(p.TurnFailed.GetOutcome()), p.TurnFailed.GetCategory(), one(p.TurnFailed.GetMessage()))
	case *eventsv1.RuntimeEvent_ModelRequested:
		return fmt.Sprintf("%s/%s", p.ModelRequested.GetProvider(), p.ModelRequested.GetModel())
	case *eventsv1.RuntimeEvent_ModelDelta:
		return one(p.ModelDelta.GetText())
	case *eventsv1.RuntimeEvent_ReasoningDelta:
		return "(thinking) " + one(p.ReasoningDelta.GetText())
	case *eventsv1.RuntimeEvent_ModelCompleted:
		u := p.ModelCompleted.GetUsage()
		if u == nil {
			return fmt.Sprintf("%s, usage unknown", p.ModelCompleted.GetStopReason())
		}
		return fmt.Sprintf("%s, %d in / %d out tokens", p.ModelCompleted.GetStopReason(), u.GetInputTokens(), u.GetOutputTokens())
	case *eventsv1.RuntimeEvent_ModelFailed:
		return fmt.Sprintf("%s/%s %s: %s", p.ModelFailed.GetProvider(), p.ModelFailed.GetModel(), p.ModelFailed.GetCategory(), one(p.ModelFailed.GetMessage()))
	case *eventsv1.RuntimeEvent_ToolStarted:
		return fmt.Sprintf("%s [%s]", p.ToolStarted.GetToolName(), ev.GetToolCallId())
	case *eventsv1.RuntimeEvent_ToolArgs:
		return one(p.ToolArgs.GetSafeArgsJson())
	case *eventsv1.RuntimeEvent_ToolResult:
		return one(p.ToolResult.GetPreview())
	case *eventsv1.RuntimeEvent_ToolFailed:
		return fmt.Sprintf("%s: %s", p.ToolFailed.GetCategory(), one(p.ToolFailed.GetMessage()))
	case *eventsv1.RuntimeEvent_ActionRequired:
		return fmt.Sprintf("%s: %s  (agentruntime approve|deny %s)", ev.GetActionId(), one(p.ActionRequired.GetPrompt()), ev.GetActionId())
	case *eventsv1.RuntimeEvent_ActionResolved:
		return fmt.Sprintf("%s %s by %s", ev.GetActionId(), p.ActionResolved.GetDecision(), p.ActionResolved.GetResponder())
	case *eventsv1.RuntimeEvent_PermissionEvaluated:
		return fmt.Sprintf("%s: %s (%s)", p.PermissionEvaluated.GetName(), enums.Word(p.PermissionEvaluated.GetDecision()), one(p.PermissionEvaluated.GetDecisionReason()))
	case *eventsv1.RuntimeEvent_RoutingDecided:
		return "selected " + p.RoutingDecided.GetDecision().GetSelectedModelId()
	case *eventsv1.RuntimeEvent_RoutingNotPossible:
		return one(p.RoutingNotPossible.GetReason())
	case *eventsv1.RuntimeEvent_CostRecorded:
		return fmt.Sprintf("%s: %.6f USD", p.CostRecorded.GetModelId(), float64(p.CostRecorded.GetCost().GetTotalNanos())/1e9)
	case *eventsv1.RuntimeEvent_RunStatus:
		return one(p.RunStatus.GetTitle() + ": " + p.RunStatus.GetDetail())
	case *eventsv1.RuntimeEvent_ContextResolved:
		return fmt.Sprintf("~%d tokens", p.ContextResolved.GetTokens())
	case *eventsv1.RuntimeEvent_ToolCatalogResolved:
		return strings.Join(p.ToolCatalogResolved.GetToolNames(), ", ")
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s", ev.GetTurnId(), ev.GetActionId()))
}

func inputText(parts []*eventsv1.InputPart) string {
	var out []string
	for _, p := range parts {
		out = append(out, p.GetText()+p.GetJson()+p.GetRef())
	}
	return strings.Join(out, " ")
}

func clipLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// runRespond is `approve` and `deny`: answer an action by id, or the one
// pending action of the session's thread.
func runRespond(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentruntime "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf              clientFlags
		session, thread string
		decision        string
	)
	cf.register(fs)
	fs.StringVar(&session, "session", "default", "session of the pending action (when no id is given)")
	fs.StringVar(&thread, "thread", "main", "thread of the pending action (when no id is given)")
	def := "allow_once"
	if verb == "deny" {
		def = "deny"
	}
	fs.StringVar(&decision, "decision", def, "the decision to record (one of the action's decisions)")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		fmt.Fprintf(stderr, "usage: agentruntime %s [flags] [action-id]\n", verb)
		return errUsage
	}
	conn, err := cf.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	client := controlv1.NewControlServiceClient(conn)
	id := ""
	if len(rest) == 1 {
		id = rest[0]
	} else if id, err = pendingAction(ctx, client, verb, session, thread); err != nil {
		return err
	}
	return respondAction(ctx, client, verb, &controlv1.RespondActionRequest{ActionId: id, Decision: decision}, stdout)
}

// pendingAction is the one action pending on a thread.
func pendingAction(ctx context.Context, client controlv1.ControlServiceClient, verb, session, thread string) (string, error) {
	th, err := client.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: session, ThreadId: thread})
	if err != nil {
		return "", rpcError(verb, err)
	}
	switch pending := th.GetThread().GetPendingActions(); len(pending) {
	case 0:
		return "", fmt.Errorf("%s: nothing is waiting for a decision in session %s, thread %s", verb, session, thread)
	case 1:
		return pending[0].GetActionId(), nil
	default:
		var ids []string
		for _, a := range pending {
			ids = append(ids, a.GetActionId())
		}
		return "", fmt.Errorf("%s: %d actions are pending (%s); name one", verb, len(pending), strings.Join(ids, ", "))
	}
}

func respondAction(ctx context.Context, client controlv1.ControlServiceClient, verb string, req *controlv1.RespondActionRequest, stdout io.Writer) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := client.RespondAction(rctx, req)
	if err != nil {
		return rpcError(verb, err)
	}
	a := resp.GetAction()
	if resp.GetAlreadyResolved() {
		fmt.Fprintf(stdout, "action %s was already resolved: %s\n", a.GetActionId(), a.GetDecision())
		return nil
	}
	fmt.Fprintf(stdout, "action %s: %s\n", a.GetActionId(), a.GetDecision())
	return nil
}

// runAnswer answers a question the agent asked (request_user_input, an
// action of type input), or any action whose answer carries a payload:
// `agentruntime respond [flags] [action-id] TEXT`. The text is the
// payload (a JSON string); --json gives the payload as JSON instead;
// --decision picks one of the question's choices (default "answer").
func runAnswer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const verb = "respond"
	fs := flag.NewFlagSet("agentruntime "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf                     clientFlags
		session, thread        string
		decision, payload, act string
	)
	cf.register(fs)
	fs.StringVar(&session, "session", "default", "session of the pending question (when no id is given)")
	fs.StringVar(&thread, "thread", "main", "thread of the pending question (when no id is given)")
	fs.StringVar(&decision, "decision", "answer", "the decision: answer (free text), one of the question's choices, or no_answer")
	fs.StringVar(&payload, "json", "", "the answer's payload as JSON, instead of TEXT")
	fs.StringVar(&act, "action", "", "the action to answer (default: the one pending on --session/--thread)")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) > 1:
		fmt.Fprintf(stderr, "usage: agentruntime %s [flags] [TEXT]  (name the action with --action)\n", verb)
		return errUsage
	case len(rest) == 1 && payload != "":
		return fmt.Errorf("%s: give the answer as TEXT or as --json, not both", verb)
	case len(rest) == 1:
		b, _ := json.Marshal(rest[0])
		payload = string(b)
	case payload != "" && !json.Valid([]byte(payload)):
		return fmt.Errorf("%s: --json is not valid JSON", verb)
	}
	conn, err := cf.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	client := controlv1.NewControlServiceClient(conn)
	if act == "" {
		if act, err = pendingAction(ctx, client, verb, session, thread); err != nil {
			return err
		}
	}
	return respondAction(ctx, client, verb, &controlv1.RespondActionRequest{ActionId: act, Decision: decision, PayloadJson: payload}, stdout)
}
