// Package server assembles a running selfcode: it opens the store, builds the
// router, handlers, metrics and worker pool from the configuration, serves the
// public and admin listeners, and shuts everything down in order.
package server
