package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// maxOutputPage bounds one ReadOutput answer (well under gRPC's default
// 4 MiB message limit).
const maxOutputPage = 1 << 20

// Every service names its objects "<owner>/<tenant>/..." (evidence packs,
// hook outputs, spilled outputs), so the tenant of an object is its
// second path segment.
func objectTenant(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "object://")
	if !ok {
		return "", false
	}
	parts := strings.SplitN(rest, "/", 4) // bucket, owner, tenant, rest
	if len(parts) < 4 || parts[2] == "" || parts[3] == "" {
		return "", false
	}
	return parts[2], true
}

// ReadOutput answers a page of a stored object of the caller's tenant.
// An object of another tenant, or none, is NotFound: its existence does
// not leak.
func (a *App) ReadOutput(ctx context.Context, c Caller, req *controlv1.ReadOutputRequest) (*controlv1.ReadOutputResponse, error) {
	notFound := fault.NotFoundWith("output", req.GetUri(), "output "+req.GetUri()+" not found")
	if tenant, ok := objectTenant(req.GetUri()); !ok || tenant != c.Tenant {
		return nil, notFound
	}
	data, err := a.Log.GetObject(ctx, req.GetUri())
	switch {
	case errors.Is(err, eventlog.ErrObjectNotFound), errors.Is(err, eventlog.ErrInvalid):
		// ErrInvalid: another bucket; no object of this runtime is there.
		return nil, notFound
	case err != nil:
		return nil, err
	}
	size := int64(len(data))
	if req.GetOffset() > size {
		return nil, fault.Invalid("offset", "%s", "offset is past the end of the output")
	}
	limit := int64(req.GetLimit())
	if limit <= 0 || limit > maxOutputPage {
		limit = maxOutputPage
	}
	end := min(size, req.GetOffset()+limit)
	sum := sha256.Sum256(data)
	return &controlv1.ReadOutputResponse{
		Data: data[req.GetOffset():end], SizeBytes: size, Sha256: hex.EncodeToString(sum[:]), NextOffset: end,
	}, nil
}

// StoreOutput stores a turn's large output under
// "output/<tenant>/<session>/<turn>/<sha256>": content addressed, so a
// retried call stores nothing new and answers the same ref.
func (a *App) StoreOutput(ctx context.Context, c Caller, req *controlv1.StoreOutputRequest) (*controlv1.StoreOutputResponse, error) {
	tu, err := a.turn(ctx, c, req.GetTurnId())
	if err != nil {
		return nil, err
	}
	if domain.Terminal(tu.Status) {
		return nil, &fault.Error{Kind: fault.KindPrecondition, Reason: domain.ReasonTurnEnded, Subject: "turn/" + tu.TurnId,
			Message: "turn " + tu.TurnId + " already ended as " + enums.Word(tu.Status) + "; its outputs are closed"}
	}
	owner := "tool:" + req.GetToolCallId()
	if req.GetProcessId() != "" {
		owner = "process:" + req.GetProcessId()
	}
	media := req.GetMediaType()
	if media == "" {
		media = "text/plain; charset=utf-8"
	}
	sum := sha256.Sum256(req.GetContent())
	name := "output/" + c.Tenant + "/" + tu.SessionId + "/" + tu.TurnId + "/" + hex.EncodeToString(sum[:])
	ref, err := a.Log.PutObject(ctx, name, owner, media, req.GetContent())
	if err != nil {
		return nil, err
	}
	ref.Truncated, ref.Redacted = req.GetTruncated(), req.GetRedacted()
	return &controlv1.StoreOutputResponse{Output: ref}, nil
}
