// Package e2e is the one end-to-end harness: the simulated GitHub
// (internal/fakegithub), the scripted model (internal/fakeopenai) and a real
// selfcode server between them, driven by signed webhooks derived from
// GitHub's published payloads; Scripted is the one scripted pipeline, and
// NullSandbox lets the real pipeline run on the scripted model without
// Docker when verification is not what a test is about. Tests
// that run the selfcode binary use its GitHub, payload and delivery helpers.
package e2e
