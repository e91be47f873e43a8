// Package runner is the worker's JobRunner for pipeline jobs: it takes an
// installation client, checks out the repository, hands the checkout to an
// Engine (the pipeline) and publishes what comes back — commit, push, pull
// request, check run, progress comment and reactions — idempotently.
package runner
