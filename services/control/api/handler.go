// Package api is the control service's transport: proto in, use case,
// proto out. Every handler is kit.Call (the caller from the credentials,
// the use case, grpcerr.Status for its error).
package api

import (
	"context"
	"time"

	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/services/control/app"
	"github.com/agentruntime/agentruntime/services/kit"
)

// Handler implements controlv1.ControlServiceServer.
type Handler struct {
	controlv1.UnimplementedControlServiceServer
	App      *app.App
	Claims   *app.Claims
	Webhooks *app.Webhooks
}

func (h *Handler) SubmitTurn(ctx context.Context, req *controlv1.SubmitTurnRequest) (*controlv1.SubmitTurnResponse, error) {
	return kit.Call(ctx, req, h.Claims.SubmitTurn)
}

func (h *Handler) InterruptTurn(ctx context.Context, req *controlv1.InterruptTurnRequest) (*controlv1.InterruptTurnResponse, error) {
	return kit.Call(ctx, req, h.App.InterruptTurn)
}

func (h *Handler) ResumeThread(ctx context.Context, req *controlv1.ResumeThreadRequest) (*controlv1.ResumeThreadResponse, error) {
	return kit.Call(ctx, req, h.App.ResumeThread)
}

func (h *Handler) RespondAction(ctx context.Context, req *controlv1.RespondActionRequest) (*controlv1.RespondActionResponse, error) {
	return kit.Call(ctx, req, h.App.RespondAction)
}

func (h *Handler) RemoveQueuedTurn(ctx context.Context, req *controlv1.RemoveQueuedTurnRequest) (*controlv1.RemoveQueuedTurnResponse, error) {
	return kit.Call(ctx, req, h.App.RemoveQueuedTurn)
}

func (h *Handler) PromoteQueuedTurn(ctx context.Context, req *controlv1.PromoteQueuedTurnRequest) (*controlv1.PromoteQueuedTurnResponse, error) {
	return kit.Call(ctx, req, h.App.PromoteQueuedTurn)
}

func (h *Handler) ListSessions(ctx context.Context, req *controlv1.ListSessionsRequest) (*controlv1.ListSessionsResponse, error) {
	return kit.Call(ctx, req, h.App.ListSessions)
}

func (h *Handler) ListTurns(ctx context.Context, req *controlv1.ListTurnsRequest) (*controlv1.ListTurnsResponse, error) {
	return kit.Call(ctx, req, h.App.ListTurns)
}

func (h *Handler) GetSession(ctx context.Context, req *controlv1.GetSessionRequest) (*controlv1.GetSessionResponse, error) {
	return kit.Call(ctx, req, app.Held(h.Claims, (*controlv1.GetSessionRequest).GetSessionId, h.App.GetSession))
}

func (h *Handler) GetThreadRead(ctx context.Context, req *controlv1.GetThreadReadRequest) (*controlv1.GetThreadReadResponse, error) {
	return kit.Call(ctx, req, app.Held(h.Claims, (*controlv1.GetThreadReadRequest).GetSessionId, h.App.GetThreadRead))
}

func (h *Handler) RegisterTools(ctx context.Context, req *controlv1.RegisterToolsRequest) (*controlv1.RegisterToolsResponse, error) {
	return kit.Call(ctx, req, h.App.RegisterTools)
}

func (h *Handler) GetToolInventory(ctx context.Context, req *controlv1.GetToolInventoryRequest) (*controlv1.GetToolInventoryResponse, error) {
	return kit.Call(ctx, req, h.App.GetToolInventory)
}

func (h *Handler) ReportEvents(ctx context.Context, req *controlv1.ReportEventsRequest) (*controlv1.ReportEventsResponse, error) {
	return kit.Call(ctx, req, h.Claims.ReportEvents)
}

func (h *Handler) SpawnSubagent(ctx context.Context, req *controlv1.SpawnSubagentRequest) (*controlv1.SpawnSubagentResponse, error) {
	return kit.Call(ctx, req, h.App.SpawnSubagent)
}

func (h *Handler) SendSubagentInput(ctx context.Context, req *controlv1.SendSubagentInputRequest) (*controlv1.SendSubagentInputResponse, error) {
	return kit.Call(ctx, req, h.App.SendSubagentInput)
}

func (h *Handler) WaitSubagents(ctx context.Context, req *controlv1.WaitSubagentsRequest) (*controlv1.WaitSubagentsResponse, error) {
	return kit.Call(ctx, req, h.App.WaitSubagents)
}

func (h *Handler) ResumeSubagent(ctx context.Context, req *controlv1.ResumeSubagentRequest) (*controlv1.ResumeSubagentResponse, error) {
	return kit.Call(ctx, req, h.App.ResumeSubagent)
}

func (h *Handler) CloseSubagent(ctx context.Context, req *controlv1.CloseSubagentRequest) (*controlv1.CloseSubagentResponse, error) {
	return kit.Call(ctx, req, h.App.CloseSubagent)
}

func (h *Handler) ListSubagents(ctx context.Context, req *controlv1.ListSubagentsRequest) (*controlv1.ListSubagentsResponse, error) {
	return kit.Call(ctx, req, app.Held(h.Claims, (*controlv1.ListSubagentsRequest).GetSessionId, h.App.ListSubagents))
}

func (h *Handler) ReconnectChannel(ctx context.Context, req *controlv1.ReconnectChannelRequest) (*controlv1.ReconnectChannelResponse, error) {
	return kit.Call(ctx, req, h.App.ReconnectChannel)
}

func (h *Handler) AckEvents(ctx context.Context, req *controlv1.AckEventsRequest) (*controlv1.AckEventsResponse, error) {
	return kit.Call(ctx, req, h.App.AckEvents)
}

func (h *Handler) ClaimTurn(ctx context.Context, req *controlv1.ClaimTurnRequest) (*controlv1.ClaimTurnResponse, error) {
	return kit.Call(ctx, req, h.Claims.ClaimTurn)
}

func (h *Handler) HeartbeatTurn(ctx context.Context, req *controlv1.HeartbeatTurnRequest) (*controlv1.HeartbeatTurnResponse, error) {
	return kit.Call(ctx, req, h.Claims.HeartbeatTurn)
}

func (h *Handler) GetTurnAttempts(ctx context.Context, req *controlv1.GetTurnAttemptsRequest) (*controlv1.GetTurnAttemptsResponse, error) {
	return kit.Call(ctx, req, h.Claims.GetTurnAttempts)
}

func (h *Handler) ReadOutput(ctx context.Context, req *controlv1.ReadOutputRequest) (*controlv1.ReadOutputResponse, error) {
	return kit.Call(ctx, req, h.Claims.ReadOutputHeld)
}

func (h *Handler) StoreOutput(ctx context.Context, req *controlv1.StoreOutputRequest) (*controlv1.StoreOutputResponse, error) {
	return kit.Call(ctx, req, h.App.StoreOutput)
}

func (h *Handler) WriteProcessStdin(ctx context.Context, req *controlv1.WriteProcessStdinRequest) (*controlv1.WriteProcessStdinResponse, error) {
	return kit.Call(ctx, req, h.App.WriteProcessStdin)
}

func (h *Handler) TerminateProcess(ctx context.Context, req *controlv1.TerminateProcessRequest) (*controlv1.TerminateProcessResponse, error) {
	return kit.Call(ctx, req, h.App.TerminateProcess)
}

// RequestAction: an action a client requests is requested by its caller.
func (h *Handler) RequestAction(ctx context.Context, req *controlv1.RequestActionRequest) (*controlv1.RequestActionResponse, error) {
	return kit.Call(ctx, req, func(ctx context.Context, c app.Caller, req *controlv1.RequestActionRequest) (*controlv1.RequestActionResponse, error) {
		return h.App.RequestAction(ctx, c, req, c.Subject, c)
	})
}

// SubscribeEvents streams the caller's events. A channel subscription that
// ends is recorded as channel.disconnected.
func (h *Handler) SubscribeEvents(req *controlv1.SubscribeEventsRequest, stream controlv1.ControlService_SubscribeEventsServer) error {
	ctx := stream.Context()
	c, err := kit.Principal(ctx)
	if err != nil {
		return err
	}
	// A worker follows only a session it holds (app.Claims.CheckHeld).
	if err := h.Claims.CheckHeld(ctx, c, req.GetSessionId()); err != nil {
		return kit.Status(ctx, err)
	}
	err = h.App.Subscribe(ctx, c, req, stream.Send)
	if req.GetChannelId() != "" && req.GetSessionId() != "" {
		reason := "stream ended"
		if err != nil {
			reason = status.Convert(err).Message()
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = h.App.DisconnectChannel(dctx, c, req.GetSessionId(), req.GetChannelId(), reason)
	}
	return kit.Status(ctx, err)
}

func (h *Handler) CreateWebhook(ctx context.Context, req *controlv1.CreateWebhookRequest) (*controlv1.CreateWebhookResponse, error) {
	return kit.Call(ctx, req, h.Webhooks.Create)
}

func (h *Handler) ListWebhooks(ctx context.Context, req *controlv1.ListWebhooksRequest) (*controlv1.ListWebhooksResponse, error) {
	return kit.Call(ctx, req, h.Webhooks.List)
}

func (h *Handler) DeleteWebhook(ctx context.Context, req *controlv1.DeleteWebhookRequest) (*controlv1.DeleteWebhookResponse, error) {
	return kit.Call(ctx, req, h.Webhooks.Delete)
}
