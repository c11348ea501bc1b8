package projection

import "time"

// SetPoll lets tests stretch the safety-net poll of WaitFor, to prove that
// notifications alone wake waiters.
func SetPoll(r *Redis, minPoll, maxPoll time.Duration) {
	r.minPoll, r.maxPoll = minPoll, maxPoll
}

// Waiters counts the WaitFor calls registered for notifications.
func Waiters(r *Redis) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, set := range r.waiters {
		n += len(set)
	}
	return n
}
