// Package wire builds the GitHub-backed parts of a running server from the
// configuration: the client factory, permission checker, notifier and the
// job runner around a pipeline engine. serve, the demo and the end-to-end
// tests share it so they run the same code.
package wire
