package a2a

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Push notification configs (docs/a2a.md, "Push notifications") are the
// tenant's webhooks of the control API, each scoped to one task and
// delivered in A2A's format: CreateWebhook with a2a_push, ListWebhooks,
// DeleteWebhook, called with the caller's credentials. The control
// service delivers them (retries, the allowlist, the delivery facts); it
// makes each body with PushBody.

// PushBody is the body of a push notification of a task: the
// StreamResponse holding the task as its events (the turn's, in log
// order) fold it. The control service calls it at each delivery attempt,
// so a receiver gets the task's current state, not an old one.
func PushBody(turnID, sessionID, threadID string, evs []*eventsv1.RuntimeEvent) ([]byte, error) {
	v := newTaskView(turnID, contextOf(sessionID, threadID))
	for _, ev := range evs {
		if ev.GetTurnId() == turnID {
			v.apply(ev)
		}
	}
	t := v.snapshot()
	return json.Marshal(StreamResponse{Task: &t})
}

// AuthenticationInfo is how a push receiver authenticates the server.
type AuthenticationInfo struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials,omitempty"`
}

// TaskPushNotificationConfig is a push notification config of a task.
type TaskPushNotificationConfig struct {
	Tenant         string              `json:"tenant,omitempty"`
	ID             string              `json:"id,omitempty"`
	TaskID         string              `json:"taskId"`
	URL            string              `json:"url"`
	Token          string              `json:"token,omitempty"`
	Authentication *AuthenticationInfo `json:"authentication,omitempty"`
}

// PushConfigRequest is GetTaskPushNotificationConfig's and
// DeleteTaskPushNotificationConfig's params.
type PushConfigRequest struct {
	Tenant string `json:"tenant"`
	TaskID string `json:"taskId"`
	ID     string `json:"id"`
}

// ListPushConfigsRequest is ListTaskPushNotificationConfigs' params.
type ListPushConfigsRequest struct {
	Tenant    string `json:"tenant"`
	TaskID    string `json:"taskId"`
	PageSize  int    `json:"pageSize"`
	PageToken string `json:"pageToken"`
}

// ListPushConfigsResponse is ListTaskPushNotificationConfigs' result.
type ListPushConfigsResponse struct {
	Configs       []TaskPushNotificationConfig `json:"configs"`
	NextPageToken string                       `json:"nextPageToken"`
}

func configNotFound(task, id string) *rpcError {
	return &rpcError{Code: codeTaskNotFound, Message: "task " + task + " has no push notification config " + id,
		Data: map[string]any{"taskId": task, "field": "params.id"}}
}

// createPushConfig serves CreateTaskPushNotificationConfig (field is
// where the config is in the request: "params", or
// "params.configuration.taskPushNotificationConfig" on a send). A config
// of the same id on the task is replaced, as A2A's stores do.
func (h *Handler) createPushConfig(ctx context.Context, field string, p *TaskPushNotificationConfig) (*TaskPushNotificationConfig, *rpcError) {
	if err := checkTaskID(field+".taskId", p.TaskID); err != nil {
		return nil, err
	}
	if p.URL == "" {
		return nil, invalidParams(field+".url", "required")
	}
	if p.ID != "" && (len(p.ID) > maxIDLen || !configIDPattern.MatchString(p.ID)) {
		return nil, invalidParams(field+".id", "letters, digits, and - _ . : (at most %d), starting with a letter or digit", maxIDLen)
	}
	req := &controlv1.A2APush{TaskId: p.TaskID, ConfigId: p.ID, Token: p.Token}
	if a := p.Authentication; a != nil {
		req.AuthScheme, req.AuthCredentials = a.Scheme, a.Credentials
	}
	if p.ID != "" {
		old, err := h.pushConfigs(ctx, p.TaskID)
		if err != nil {
			return nil, err
		}
		for _, wh := range old {
			if wh.GetA2APush().GetConfigId() == p.ID {
				if _, err := h.control.DeleteWebhook(ctx, &controlv1.DeleteWebhookRequest{WebhookId: wh.GetWebhookId()}); err != nil && status.Code(err) != codes.NotFound {
					return nil, fromStatus(err, p.TaskID)
				}
			}
		}
	}
	resp, err := h.control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: p.URL, A2APush: req, Description: "A2A push notification config"})
	if err != nil {
		return nil, pushError(err, field, p.TaskID)
	}
	out := configOf(resp.GetWebhook())
	return &out, nil
}

// configIDPattern is the config id rule (the API's a2a_push.config_id).
var configIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)

// pushError is an API error of a config call, its fields named as the
// A2A request names them.
func pushError(err error, field, task string) *rpcError {
	e := fromStatus(err, task)
	if f, ok := e.Data["field"].(string); ok {
		switch {
		case f == "url":
			f = field + ".url"
		case strings.HasPrefix(f, "a2a_push."):
			f = field + "." + map[string]string{"task_id": "taskId", "config_id": "id", "token": "token",
				"auth_scheme": "authentication.scheme", "auth_credentials": "authentication.credentials"}[strings.TrimPrefix(f, "a2a_push.")]
		}
		e.Data["field"] = f
		if i := strings.Index(e.Message, ":"); i > 0 && !strings.HasPrefix(e.Message, f) {
			e.Message = f + e.Message[i:]
		}
	}
	return e
}

// pushConfigs are the task's configs, after checking that the caller sees
// the task (another tenant's is TaskNotFound).
func (h *Handler) pushConfigs(ctx context.Context, task string) ([]*controlv1.Webhook, *rpcError) {
	if _, err := h.locate(ctx, task); err != nil {
		return nil, err
	}
	resp, err := h.control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{A2ATaskId: task})
	if err != nil {
		return nil, fromStatus(err, task)
	}
	return resp.GetWebhooks(), nil
}

func configOf(wh *controlv1.Webhook) TaskPushNotificationConfig {
	a := wh.GetA2APush()
	c := TaskPushNotificationConfig{ID: a.GetConfigId(), TaskID: a.GetTaskId(), URL: wh.GetUrl(), Token: a.GetToken()}
	if a.GetAuthScheme() != "" {
		c.Authentication = &AuthenticationInfo{Scheme: a.GetAuthScheme()}
	}
	return c
}

func (h *Handler) findPushConfig(ctx context.Context, p *PushConfigRequest) (*controlv1.Webhook, *rpcError) {
	if err := checkTaskID("params.taskId", p.TaskID); err != nil {
		return nil, err
	}
	if p.ID == "" {
		return nil, invalidParams("params.id", "required")
	}
	list, err := h.pushConfigs(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	for _, wh := range list {
		if wh.GetA2APush().GetConfigId() == p.ID {
			return wh, nil
		}
	}
	return nil, configNotFound(p.TaskID, p.ID)
}

// getPushConfig serves GetTaskPushNotificationConfig: the config with its
// token; credentials are never read back.
func (h *Handler) getPushConfig(ctx context.Context, p *PushConfigRequest) (*TaskPushNotificationConfig, *rpcError) {
	wh, err := h.findPushConfig(ctx, p)
	if err != nil {
		return nil, err
	}
	c := configOf(wh)
	return &c, nil
}

// deletePushConfig serves DeleteTaskPushNotificationConfig: deliveries
// still owed to the config are cancelled, not sent.
func (h *Handler) deletePushConfig(ctx context.Context, p *PushConfigRequest) *rpcError {
	wh, err := h.findPushConfig(ctx, p)
	if err != nil {
		return err
	}
	// The control API answers once its read model has dropped the config
	// (and a create once it holds it): A2A has no read-your-writes token,
	// and the client's next Get or List sees what it did.
	if _, err := h.control.DeleteWebhook(ctx, &controlv1.DeleteWebhookRequest{WebhookId: wh.GetWebhookId()}); err != nil {
		return fromStatus(err, p.TaskID)
	}
	return nil
}

// listPushConfigs serves ListTaskPushNotificationConfigs: every config of
// the task in one page (a task has at most 10).
func (h *Handler) listPushConfigs(ctx context.Context, p *ListPushConfigsRequest) (*ListPushConfigsResponse, *rpcError) {
	if err := checkTaskID("params.taskId", p.TaskID); err != nil {
		return nil, err
	}
	if p.PageSize < 0 {
		return nil, invalidParams("params.pageSize", "must not be negative")
	}
	list, err := h.pushConfigs(ctx, p.TaskID)
	if err != nil {
		return nil, err
	}
	out := &ListPushConfigsResponse{Configs: []TaskPushNotificationConfig{}}
	for _, wh := range list {
		out.Configs = append(out.Configs, configOf(wh))
	}
	return out, nil
}
