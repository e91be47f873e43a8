// Package handlers is selfcode's HTTP surface on gin: the public listener
// (POST /webhook, /healthz, /readyz) and the admin listener (/metrics, the
// jobs API and the dashboard). Handlers verify, decide and store; they never
// wait on GitHub, the model or Docker.
package handlers
