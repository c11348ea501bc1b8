package server_test

import (
	"context"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/auth"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/server"
)

type controlStub struct {
	controlv1.UnimplementedControlServiceServer
	tenants chan string
}

func (c *controlStub) GetSession(ctx context.Context, _ *controlv1.GetSessionRequest) (*controlv1.GetSessionResponse, error) {
	p, _ := auth.FromContext(ctx)
	c.tenants <- p.Tenant
	return &controlv1.GetSessionResponse{Sequence: 7}, nil
}

// The project's own protos carry the rules; this checks the kit enforces
// them on generated types exactly as on the dynamic probe.
func TestValidationWithGeneratedControlProto(t *testing.T) {
	stub := &controlStub{tenants: make(chan string, 1)}
	h := startWith(t, func(s *server.Server) { controlv1.RegisterControlServiceServer(s.GRPC(), stub) })
	client := controlv1.NewControlServiceClient(h.conn)
	ctx := ctxWithKey(testKey)

	for _, bad := range []string{"", "has.dot", "has space"} {
		_, err := client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: bad})
		st := requireCode(t, err, codes.InvalidArgument)
		violations := fieldViolations(t, st)
		require.NotEmpty(t, violations, "session_id %q", bad)
		assert.Equal(t, "session_id", violations[0].GetField())
	}

	resp, err := client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "ses_01J"})
	require.NoError(t, err)
	assert.Equal(t, uint64(7), resp.GetSequence())
	assert.Equal(t, "acme", <-stub.tenants)
}

func TestValidationStatus(t *testing.T) {
	verr := &protovalidate.ValidationError{Violations: []*protovalidate.Violation{
		{Proto: validate.Violation_builder{
			Field: validate.FieldPath_builder{Elements: []*validate.FieldPathElement{
				validate.FieldPathElement_builder{FieldName: proto.String("input")}.Build(),
				validate.FieldPathElement_builder{FieldName: proto.String("parts"), Index: proto.Uint64(0)}.Build(),
				validate.FieldPathElement_builder{FieldName: proto.String("text")}.Build(),
			}}.Build(),
			RuleId:  proto.String("string.min_len"),
			Message: proto.String("value length must be at least 1 characters"),
		}.Build()},
		// A message-level (CEL) rule names no field.
		{Proto: validate.Violation_builder{
			RuleId:  proto.String("turn.exactly_one_input"),
			Message: proto.String("exactly one input is required"),
		}.Build()},
		// A rule without a message still says which rule.
		{Proto: validate.Violation_builder{RuleId: proto.String("custom-rule")}.Build()},
	}}

	st := server.ValidationStatus(verr)
	assert.Equal(t, codes.InvalidArgument, st.Code())
	assert.Equal(t,
		"invalid request: input.parts[0].text: value length must be at least 1 characters; exactly one input is required; violates rule custom-rule",
		st.Message())
	v := fieldViolations(t, st)
	require.Len(t, v, 3)
	assert.Equal(t, "input.parts[0].text", v[0].GetField())
	assert.Equal(t, "STRING_MIN_LEN", v[0].GetReason())
	assert.Equal(t, "", v[1].GetField())
	assert.Equal(t, "TURN_EXACTLY_ONE_INPUT", v[1].GetReason())
	assert.Equal(t, "CUSTOM_RULE", v[2].GetReason())
}
