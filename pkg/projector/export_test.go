package projector

// NewFeedWithBatch is NewFeed with a batch bound, for tests.
var NewFeedWithBatch = newFeed
