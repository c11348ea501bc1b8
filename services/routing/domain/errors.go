// Package domain holds the routing service's decisions as pure functions:
// registry changes, task profiles, candidate sets, routing decisions,
// fallback, pricing, budgets and the limit items a model is subject to. No
// I/O: the app layer loads state and limit counters, calls these, and
// appends what they return.
package domain

import (
	"fmt"

	"github.com/agentruntime/agentruntime/pkg/fault"
)

func invalid(field, format string, args ...any) *fault.Error {
	return fault.Invalid(field, format, args...)
}

func notFound(kind, id string) *fault.Error { return fault.NotFound(kind, id) }

func precondition(reason, subject, format string, args ...any) *fault.Error {
	return fault.Precondition(reason, subject, fmt.Sprintf(format, args...), nil)
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
