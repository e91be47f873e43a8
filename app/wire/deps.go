package wire

import (
	"context"
	"log/slog"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/engine"
	"github.com/selfcode/selfcode/app/metrics"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/handlers"
)

// Deps builds every outside-world part of a running server from the
// configuration: the sandbox manager (which reaps what a crashed previous
// run left) and its readiness check, the one model client, the pipeline,
// and the GitHub App side around it. `serve` and `demo` both use it; they
// differ only in the configuration they pass (the demo's points at the
// simulated GitHub and the recorded model). Without App credentials the
// jobs are held: stored and queued, never lost, until a restart with them.
func Deps(ctx context.Context, cfg *config.Config, log *slog.Logger, st *store.Store, m *metrics.Metrics, instance string) (server.Deps, error) {
	sb, ready, err := Sandbox(ctx, cfg, instance, log)
	if err != nil {
		return server.Deps{}, err
	}
	if cfg.AppID == 0 || (cfg.PrivateKey == "" && cfg.PrivateKeyPath == "") {
		return server.Deps{Ready: []handlers.ReadyCheck{ready},
			Hold: "no GitHub App credentials: set SELFCODE_APP_ID and SELFCODE_PRIVATE_KEY or SELFCODE_PRIVATE_KEY_PATH (selfcode setup writes them)"}, nil
	}
	model, err := Model(cfg, log) // one client for every role, the morning report's too
	if err != nil {
		return server.Deps{}, err
	}
	p, err := Pipeline(PipelineOptions{Config: cfg, Logger: log, Metrics: m, Sandbox: sb, Model: model})
	if err != nil {
		return server.Deps{}, err
	}
	return GitHub(Options{Config: cfg, Logger: log, Engine: engine.Engine{Pipeline: p}, Model: model,
		Ready: []handlers.ReadyCheck{ready}})(ctx, st, m, instance)
}
