package tasks

import "github.com/agentruntime/agentruntime/pkg/projection"

// StoreOf exposes a service's read-model store to tests that run a second
// replica on it.
func StoreOf(s *Service) projection.Store { return s.deps.Store }
