package a2a

// SetListExamine sets how many turns a filtered ListTasks call without a
// contextId examines, so a test reaches the bound with a few turns.
func SetListExamine(h *Handler, n int64) { h.examine = n }
