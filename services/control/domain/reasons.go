package domain

// Reason codes of the control service's refusals (fault.Error.Reason):
// stable UPPER_SNAKE codes clients match on (docs/architecture.md, "Errors:
// one vocabulary, one mapping").
const (
	ReasonActiveTurnChanged  = "ACTIVE_TURN_CHANGED"
	ReasonProcessEnded       = "PROCESS_ENDED"
	ReasonQueueFull          = "QUEUE_FULL"
	ReasonSubscriberTooSlow  = "SUBSCRIBER_TOO_SLOW"
	ReasonServerShuttingDown = "SERVER_SHUTTING_DOWN"
	ReasonSubagentClosed     = "SUBAGENT_CLOSED"
	ReasonThreadBusy         = "THREAD_BUSY"
	ReasonThreadClosed       = "THREAD_CLOSED"
	ReasonTurnEnded          = "TURN_ENDED"
	ReasonTurnNotActive      = "TURN_NOT_ACTIVE"
	ReasonTurnNotClaimable   = "TURN_NOT_CLAIMABLE"
	ReasonTurnNotQueued      = "TURN_NOT_QUEUED"
	ReasonTurnNotStartable   = "TURN_NOT_STARTABLE"
)
