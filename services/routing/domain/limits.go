package domain

import (
	"time"
)

// LimitMode is what a limit evaluation may do to the counters.
type LimitMode int

const (
	// Check reports every item's state and changes nothing.
	Check LimitMode = iota
	// Consume applies every item's cost if and only if every item allows
	// it: all or nothing, atomically.
	Consume
	// Charge applies quota costs unconditionally (the usage happened
	// already) and reports the state before and after. Rate items are
	// ignored.
	Charge
)

// RateItem is one GCRA rate limit bucket: Rate units per Period, with a
// burst of Rate (a full period's worth may be used at once).
type RateItem struct {
	Key    string
	Rate   int64
	Period time.Duration
	Cost   int64
}

// QuotaItem is one fixed-window counter: at most Limit per window. The key
// names the window (it carries the day), Window is how long it lives.
type QuotaItem struct {
	Key    string
	Limit  int64
	Cost   int64
	Window time.Duration
}

// LimitRequest is one atomic evaluation of several limits of a tenant.
type LimitRequest struct {
	Mode   LimitMode
	Rates  []RateItem
	Quotas []QuotaItem
	// IdempotencyKey (Charge only): a second charge with the same key
	// changes nothing and reports Duplicate.
	IdempotencyKey string
}

// RateResult is a rate item's state.
type RateResult struct {
	Allowed bool
	// Remaining is what could be used at once after this evaluation.
	Remaining  int64
	RetryAfter time.Duration
}

// QuotaResult is a quota item's state.
type QuotaResult struct {
	Allowed bool
	// Before and After are the window's usage around this evaluation
	// (equal unless it consumed or charged).
	Before, After int64
}

// LimitResult answers a LimitRequest, item by item in request order.
type LimitResult struct {
	// Allowed: every item allowed its cost (for Consume: and it was applied).
	Allowed   bool
	Duplicate bool
	Rates     []RateResult
	Quotas    []QuotaResult
}
