//go:build !race

package tasks_test

const graphSize = 10000
