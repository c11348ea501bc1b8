package projector

// WithAfterWrite runs fn after each batch's store write, before the next
// batch: where a test kills the process.
func WithAfterWrite(fn func(checkpoint uint64)) Option {
	return func(o *options) { o.afterWrite = fn }
}
