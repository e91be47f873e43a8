// Package server is selfcode's composition root: from the configuration it
// builds everything a running selfcode has (store, metrics, the one model
// client, sandbox manager, pipeline, GitHub client factory, job runner,
// worker pool, overnight scheduler, budget, webhook and admin HTTP), serves,
// and shuts down in order. serve, the demo and the tests differ only in
// what they pass in Options; `selfcode run` uses its Pipeline and Sandbox.
package server
