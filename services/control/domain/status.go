package domain

import (
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// Short names of the read models' statuses the decisions test.
const (
	TurnAccepted     = controlv1.TurnStatus_TURN_STATUS_ACCEPTED
	TurnQueued       = controlv1.TurnStatus_TURN_STATUS_QUEUED
	TurnSteered      = controlv1.TurnStatus_TURN_STATUS_STEERED
	TurnRunning      = controlv1.TurnStatus_TURN_STATUS_RUNNING
	TurnInterrupting = controlv1.TurnStatus_TURN_STATUS_INTERRUPTING
	TurnCompleted    = controlv1.TurnStatus_TURN_STATUS_COMPLETED
	TurnFailed       = controlv1.TurnStatus_TURN_STATUS_FAILED
	TurnCancelled    = controlv1.TurnStatus_TURN_STATUS_CANCELLED
	TurnTimedOut     = controlv1.TurnStatus_TURN_STATUS_TIMED_OUT
	TurnRolledBack   = controlv1.TurnStatus_TURN_STATUS_ROLLED_BACK

	ThreadClosed = controlv1.ThreadStatus_THREAD_STATUS_CLOSED

	ActionPending = controlv1.ActionStatus_ACTION_STATUS_PENDING
)

// Terminal reports whether a turn status is final.
func Terminal(status controlv1.TurnStatus) bool {
	switch status {
	case TurnCompleted, TurnFailed, TurnCancelled, TurnTimedOut, TurnRolledBack:
		return true
	}
	return false
}

// Attempt statuses (the claims read model).
const (
	AttemptRunning   = controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_RUNNING
	AttemptLost      = controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_LOST
	AttemptCompleted = controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_COMPLETED
	AttemptFailed    = controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_FAILED
	AttemptCancelled = controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_CANCELLED
	AttemptTimedOut  = controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_TIMED_OUT
	AttemptParked    = controlv1.TurnAttemptStatus_TURN_ATTEMPT_STATUS_PARKED
)
