package server

import (
	"strings"

	"buf.build/go/protovalidate"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ValidationStatus converts protovalidate's verdict into InvalidArgument
// with a google.rpc.BadRequest detail holding one field violation per rule
// broken, so clients can point at the exact field ("input.parts[0].text").
// The status message repeats them for humans reading logs or grpcurl.
func ValidationStatus(verr *protovalidate.ValidationError) *status.Status {
	br := &errdetails.BadRequest{}
	lines := make([]string, 0, len(verr.Violations))
	for _, v := range verr.Violations {
		field := protovalidate.FieldPathString(v.Proto.GetField())
		desc := v.Proto.GetMessage()
		if desc == "" {
			desc = "violates rule " + v.Proto.GetRuleId()
		}
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{
			Field:       field,
			Description: desc,
			Reason:      reason(v.Proto.GetRuleId()),
		})
		if field != "" {
			lines = append(lines, field+": "+desc)
		} else {
			lines = append(lines, desc)
		}
	}
	st := status.New(codes.InvalidArgument, "invalid request: "+strings.Join(lines, "; "))
	withDetails, err := st.WithDetails(br)
	if err != nil {
		// Only fails for a nil or unmarshalable detail; the plain status
		// still tells the caller what is wrong.
		return st
	}
	return withDetails
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
