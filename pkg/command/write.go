package command

import (
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
)

// Write is the result as every API answers it (common.v1.WriteResult): the
// consistency token, the ids of the command's events, and whether the
// command changed nothing new: its decision appended nothing (the fact was
// already there), or every event it appended was a duplicate the log
// recognised (a retry of a command that had landed).
func (r Result) Write() *commonv1.WriteResult {
	w := &commonv1.WriteResult{Sequence: r.Sequence, Deduplicated: true}
	for _, a := range r.Appended {
		w.EventIds = append(w.EventIds, a.EventID)
		w.Deduplicated = w.Deduplicated && a.Duplicate
	}
	return w
}
