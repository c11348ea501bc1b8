//go:build race

package tasks_test

// The race detector slows this service's hot path (JetStream round trips,
// proto folds) several times over; under it the graph test runs a smaller
// graph of the same shape so the suite stays fast. Without -race it runs
// the full 10,000 tasks.
const graphSize = 2047
