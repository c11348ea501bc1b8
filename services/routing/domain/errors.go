// Package domain holds the routing service's decisions as pure functions:
// registry changes, task profiles, candidate sets, routing decisions,
// fallback, pricing, budgets and the limit items a model is subject to. No
// I/O: the app layer loads state and limit counters, calls these, and
// appends what they return.
package domain

import (
	"fmt"
	"time"
)

// Code classifies a domain error; the gRPC layer maps each onto one status.
type Code int

const (
	// Invalid: a request field breaks a rule (Field names it).
	Invalid Code = iota + 1
	// NotFound: the named resource does not exist for the tenant.
	NotFound
	// Precondition: the state does not allow the command (Reason).
	Precondition
	// Exhausted: a limit, quota or budget refuses (Reason, RetryAfter).
	Exhausted
)

// Error is a domain refusal: the caller's answer, never an outage.
type Error struct {
	Code       Code
	Field      string // Invalid
	Kind, ID   string // NotFound
	Reason     string // Precondition, Exhausted: stable UPPER_SNAKE code
	Subject    string
	Message    string
	RetryAfter time.Duration
	Metadata   map[string]string
}

func (e *Error) Error() string {
	switch e.Code {
	case Invalid:
		return e.Field + ": " + e.Message
	case NotFound:
		return fmt.Sprintf("%s %q not found", e.Kind, e.ID)
	}
	return e.Message
}

func invalid(field, format string, args ...any) *Error {
	return &Error{Code: Invalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

func notFound(kind, id string) *Error { return &Error{Code: NotFound, Kind: kind, ID: id} }

func precondition(reason, subject, format string, args ...any) *Error {
	return &Error{Code: Precondition, Reason: reason, Subject: subject, Message: fmt.Sprintf(format, args...)}
}

// Reasons of Precondition errors.
const (
	ReasonPriceMissing       = "PRICE_MISSING"
	ReasonProfileNotResolved = "PROFILE_NOT_RESOLVED"
	ReasonNoDecision         = "NO_ROUTING_DECISION"
	ReasonNotCurrentModel    = "NOT_CURRENT_MODEL"
	ReasonProviderHasModels  = "PROVIDER_HAS_MODELS"
	ReasonRateLimited        = "RATE_LIMITED"
	ReasonQuotaExhausted     = "QUOTA_EXHAUSTED"
)
