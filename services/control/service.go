// Package control is the control service: it owns sessions, threads, turns,
// the queue, human actions, subagents, channels and the event subscription
// (DESIGN §2). The handlers here are thin: they take the caller from the
// credentials, call a use case in app, and map errors in one place.
package control

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/auth"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/app"
	"github.com/agentruntime/agentruntime/services/control/domain"
	rm "github.com/agentruntime/agentruntime/services/control/projector"
	"github.com/agentruntime/agentruntime/services/kit"
	"github.com/agentruntime/agentruntime/services/tasks/adapters"
)

// Name is the service's name in `agentruntime serve <name>`.
const Name = "control"

// HealthName is the grpc.health.v1 service name probes ask for.
var HealthName = controlv1.ControlService_ServiceDesc.ServiceName

// Service implements controlv1.ControlServiceServer.
type Service struct {
	controlv1.UnimplementedControlServiceServer
	deps kit.Deps
	app  *app.App
	// ExpiryInterval is how often pending action deadlines are checked.
	ExpiryInterval time.Duration
	claims         *app.Claims
	// LeaseSweepInterval is how often turn leases are checked.
	LeaseSweepInterval time.Duration
}

// LeasePrefix prefixes the service's Redis turn-lease keys.
const LeasePrefix = "agentruntime:control:lease:"

// New builds the service on its dependencies.
func New(deps kit.Deps) *Service {
	a := app.New(deps.Log, deps.Store)
	// Turn leases live in Redis when the service has it (every replica
	// sees the same holder), in process otherwise (dev: one process).
	var leases app.Leases = adapters.NewMemoryLeases(nil)
	if deps.Redis != nil {
		leases = adapters.NewRedisLeases(deps.Redis, LeasePrefix)
	}
	return &Service{deps: deps, app: a, ExpiryInterval: 250 * time.Millisecond,
		claims: app.NewClaims(a, leases, deps.Logger), LeaseSweepInterval: time.Second}
}

// SetSubscriberLimits bounds what each new subscription may cost
// (defaults: app.DefaultSubscriberLimits).
func (s *Service) SetSubscriberLimits(l app.SubscriberLimits) { s.app.SetSubscriberLimits(l) }

// Name implements kit.Service.
func (s *Service) Name() string { return Name }

// HealthName implements kit.Service.
func (s *Service) HealthName() string { return HealthName }

// Register implements kit.Service.
func (s *Service) Register(g *grpc.Server) { controlv1.RegisterControlServiceServer(g, s) }

// Run projects the read model, expires actions whose deadline passed, and
// turns permission requests into actions, and fails claimed turns whose
// lease expired.
func (s *Service) Run(ctx context.Context) error {
	errs := make(chan error, 5)
	go func() { errs <- projector.Run(ctx, s.deps.Log, s.deps.Store, rm.Projection{}, s.deps.Logger) }()
	go func() { errs <- projector.Run(ctx, s.deps.Log, s.deps.Store, rm.Claims{}, s.deps.Logger) }()
	go func() { errs <- s.claims.RunSweeper(ctx, s.LeaseSweepInterval) }()
	go func() { errs <- s.expireActions(ctx) }()
	go func() { errs <- s.app.ReactToPermissionRequests(ctx, s.deps.Logger) }()
	err := <-errs
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *Service) expireActions(ctx context.Context) error {
	t := time.NewTicker(s.ExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if _, err := s.app.ExpireDue(ctx); err != nil && ctx.Err() == nil && s.deps.Logger != nil {
				s.deps.Logger.WarnContext(ctx, "expiring actions", "error", err)
			}
		}
	}
}

func caller(ctx context.Context) (app.Caller, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return app.Caller{}, status.Error(codes.Unauthenticated, "no credentials")
	}
	return app.Caller{Tenant: p.Tenant, Subject: p.Subject}, nil
}

// call runs a unary use case with the caller and maps its error.
func call[Req, Resp any](ctx context.Context, s *Service, req Req, use func(context.Context, app.Caller, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	c, err := caller(ctx)
	if err != nil {
		return zero, err
	}
	resp, err := use(ctx, c, req)
	if err != nil {
		return zero, s.toStatus(ctx, err)
	}
	return resp, nil
}

// toStatus is the one place control errors become gRPC statuses. An error
// that is not the caller's is logged with its cause, which the caller never
// sees.
func (s *Service) toStatus(ctx context.Context, err error) error {
	st := toStatus(err)
	if status.Code(st) == codes.Internal && s.deps.Logger != nil {
		s.deps.Logger.ErrorContext(ctx, "control: internal error", "error", err)
	}
	return st
}

func toStatus(err error) error {
	var de *domain.Error
	if errors.As(err, &de) {
		switch de.Kind {
		case domain.InvalidArgument:
			return grpcerr.InvalidField(de.Field, "%s", de.Message)
		case domain.NotFound:
			return grpcerr.NotFound(de.Resource, de.ID)
		case domain.AlreadyExists:
			return grpcerr.AlreadyExists(de.Resource, de.ID, de.Message)
		case domain.FailedPrecondition:
			return grpcerr.FailedPrecondition(de.Reason, de.Resource, de.Message, de.Metadata)
		}
	}
	if st := grpcerr.Infrastructure(err); st != nil {
		return st
	}
	return status.Error(codes.Internal, "internal error")
}

func (s *Service) SubmitTurn(ctx context.Context, req *controlv1.SubmitTurnRequest) (*controlv1.SubmitTurnResponse, error) {
	return call(ctx, s, req, s.app.SubmitTurn)
}

func (s *Service) InterruptTurn(ctx context.Context, req *controlv1.InterruptTurnRequest) (*controlv1.InterruptTurnResponse, error) {
	return call(ctx, s, req, s.app.InterruptTurn)
}

func (s *Service) ResumeThread(ctx context.Context, req *controlv1.ResumeThreadRequest) (*controlv1.ResumeThreadResponse, error) {
	return call(ctx, s, req, s.app.ResumeThread)
}

func (s *Service) RequestAction(ctx context.Context, req *controlv1.RequestActionRequest) (*controlv1.RequestActionResponse, error) {
	return call(ctx, s, req, func(ctx context.Context, c app.Caller, req *controlv1.RequestActionRequest) (*controlv1.RequestActionResponse, error) {
		return s.app.RequestAction(ctx, c, req, c.Subject)
	})
}

func (s *Service) RespondAction(ctx context.Context, req *controlv1.RespondActionRequest) (*controlv1.RespondActionResponse, error) {
	return call(ctx, s, req, s.app.RespondAction)
}

func (s *Service) RemoveQueuedTurn(ctx context.Context, req *controlv1.RemoveQueuedTurnRequest) (*controlv1.RemoveQueuedTurnResponse, error) {
	return call(ctx, s, req, s.app.RemoveQueuedTurn)
}

func (s *Service) PromoteQueuedTurn(ctx context.Context, req *controlv1.PromoteQueuedTurnRequest) (*controlv1.PromoteQueuedTurnResponse, error) {
	return call(ctx, s, req, s.app.PromoteQueuedTurn)
}

func (s *Service) ListSessions(ctx context.Context, req *controlv1.ListSessionsRequest) (*controlv1.ListSessionsResponse, error) {
	return call(ctx, s, req, s.app.ListSessions)
}

func (s *Service) GetSession(ctx context.Context, req *controlv1.GetSessionRequest) (*controlv1.GetSessionResponse, error) {
	return call(ctx, s, req, s.app.GetSession)
}

func (s *Service) GetThreadRead(ctx context.Context, req *controlv1.GetThreadReadRequest) (*controlv1.GetThreadReadResponse, error) {
	return call(ctx, s, req, s.app.GetThreadRead)
}

func (s *Service) RegisterTools(ctx context.Context, req *controlv1.RegisterToolsRequest) (*controlv1.RegisterToolsResponse, error) {
	return call(ctx, s, req, s.app.RegisterTools)
}

func (s *Service) GetToolInventory(ctx context.Context, req *controlv1.GetToolInventoryRequest) (*controlv1.GetToolInventoryResponse, error) {
	return call(ctx, s, req, s.app.GetToolInventory)
}

func (s *Service) ReportEvents(ctx context.Context, req *controlv1.ReportEventsRequest) (*controlv1.ReportEventsResponse, error) {
	return call(ctx, s, req, s.app.ReportEvents)
}

func (s *Service) SpawnSubagent(ctx context.Context, req *controlv1.SpawnSubagentRequest) (*controlv1.SpawnSubagentResponse, error) {
	return call(ctx, s, req, s.app.SpawnSubagent)
}

func (s *Service) SendSubagentInput(ctx context.Context, req *controlv1.SendSubagentInputRequest) (*controlv1.SendSubagentInputResponse, error) {
	return call(ctx, s, req, s.app.SendSubagentInput)
}

func (s *Service) WaitSubagents(ctx context.Context, req *controlv1.WaitSubagentsRequest) (*controlv1.WaitSubagentsResponse, error) {
	return call(ctx, s, req, s.app.WaitSubagents)
}

func (s *Service) ResumeSubagent(ctx context.Context, req *controlv1.ResumeSubagentRequest) (*controlv1.ResumeSubagentResponse, error) {
	return call(ctx, s, req, s.app.ResumeSubagent)
}

func (s *Service) CloseSubagent(ctx context.Context, req *controlv1.CloseSubagentRequest) (*controlv1.CloseSubagentResponse, error) {
	return call(ctx, s, req, s.app.CloseSubagent)
}

func (s *Service) ListSubagents(ctx context.Context, req *controlv1.ListSubagentsRequest) (*controlv1.ListSubagentsResponse, error) {
	return call(ctx, s, req, s.app.ListSubagents)
}

func (s *Service) ReconnectChannel(ctx context.Context, req *controlv1.ReconnectChannelRequest) (*controlv1.ReconnectChannelResponse, error) {
	return call(ctx, s, req, s.app.ReconnectChannel)
}

func (s *Service) AckEvents(ctx context.Context, req *controlv1.AckEventsRequest) (*controlv1.AckEventsResponse, error) {
	return call(ctx, s, req, s.app.AckEvents)
}

func (s *Service) ClaimTurn(ctx context.Context, req *controlv1.ClaimTurnRequest) (*controlv1.ClaimTurnResponse, error) {
	return call(ctx, s, req, s.claims.ClaimTurn)
}

func (s *Service) HeartbeatTurn(ctx context.Context, req *controlv1.HeartbeatTurnRequest) (*controlv1.HeartbeatTurnResponse, error) {
	return call(ctx, s, req, s.claims.HeartbeatTurn)
}

func (s *Service) GetTurnAttempts(ctx context.Context, req *controlv1.GetTurnAttemptsRequest) (*controlv1.GetTurnAttemptsResponse, error) {
	return call(ctx, s, req, s.claims.GetTurnAttempts)
}

func (s *Service) ReadOutput(ctx context.Context, req *controlv1.ReadOutputRequest) (*controlv1.ReadOutputResponse, error) {
	return call(ctx, s, req, s.app.ReadOutput)
}

func (s *Service) StoreOutput(ctx context.Context, req *controlv1.StoreOutputRequest) (*controlv1.StoreOutputResponse, error) {
	return call(ctx, s, req, s.app.StoreOutput)
}

// WriteProcessStdin implements controlv1.ControlServiceServer.
func (s *Service) WriteProcessStdin(ctx context.Context, req *controlv1.WriteProcessStdinRequest) (*controlv1.WriteProcessStdinResponse, error) {
	return call(ctx, s, req, s.app.WriteProcessStdin)
}

// TerminateProcess implements controlv1.ControlServiceServer.
func (s *Service) TerminateProcess(ctx context.Context, req *controlv1.TerminateProcessRequest) (*controlv1.TerminateProcessResponse, error) {
	return call(ctx, s, req, s.app.TerminateProcess)
}

// SubscribeEvents streams the caller's events. A channel subscription that
// ends is recorded as channel.disconnected.
func (s *Service) SubscribeEvents(req *controlv1.SubscribeEventsRequest, stream grpc.ServerStreamingServer[controlv1.SubscribeEventsResponse]) error {
	ctx := stream.Context()
	c, err := caller(ctx)
	if err != nil {
		return err
	}
	err = s.app.Subscribe(ctx, c, req, stream.Send)
	if req.GetChannelId() != "" && req.GetSessionId() != "" {
		reason := "stream ended"
		if err != nil {
			reason = status.Convert(err).Message()
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.app.DisconnectChannel(dctx, c, req.GetSessionId(), req.GetChannelId(), reason)
	}
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		return s.toStatus(ctx, err)
	}
	return nil
}
