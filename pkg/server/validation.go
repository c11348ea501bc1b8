package server

import (
	"strings"

	"buf.build/go/protovalidate"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
)

// ValidationStatus converts protovalidate's verdict into InvalidArgument
// with a google.rpc.BadRequest detail holding one field violation per rule
// broken, so clients can point at the exact field ("input.parts[0].text").
// The status message repeats them for humans reading logs or grpcurl.
func ValidationStatus(verr *protovalidate.ValidationError) *status.Status {
	violations := make([]fault.Violation, 0, len(verr.Violations))
	for _, v := range verr.Violations {
		desc := v.Proto.GetMessage()
		if desc == "" {
			desc = "violates rule " + v.Proto.GetRuleId()
		}
		violations = append(violations, fault.Violation{
			Field:       protovalidate.FieldPathString(v.Proto.GetField()),
			Description: desc,
			Reason:      reason(v.Proto.GetRuleId()),
		})
	}
	return status.Convert(grpcerr.Status(fault.InvalidFields(violations...)))
}

// reason turns a rule id ("string.min_len") into the UPPER_SNAKE_CASE form
// google.rpc.BadRequest asks of a reason ("STRING_MIN_LEN").
func reason(ruleID string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		default:
			return '_'
		}
	}, ruleID)
}
