package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/engine"
	"github.com/selfcode/selfcode/app/metrics"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/app/wire"
	"github.com/selfcode/selfcode/handlers"
)

type depsFunc = func(ctx context.Context, st *store.Store, m *metrics.Metrics, instance string) (server.Deps, error)

// productDeps builds the GitHub-backed permission checker, notifier and the
// pipeline runner. A binary built with the selfcode_testhooks tag (tests
// only) replaces them with recording fakes.
func productDeps(cfg *config.Config, log *slog.Logger) depsFunc {
	if d, ok := testDeps(cfg, log); ok {
		return d
	}
	return func(ctx context.Context, st *store.Store, m *metrics.Metrics, instance string) (server.Deps, error) {
		return githubDeps(ctx, cfg, log, st, m, instance)
	}
}

// githubDeps wires the real GitHub App side around the pipeline, with the
// sandbox (which reaps what a crashed previous run left) and its readiness
// check.
func githubDeps(ctx context.Context, cfg *config.Config, log *slog.Logger, st *store.Store, m *metrics.Metrics, instance string) (server.Deps, error) {
	sb, ready, err := wire.Sandbox(ctx, cfg, instance, log)
	if err != nil {
		return server.Deps{}, err
	}
	if cfg.AppID == 0 || (cfg.PrivateKey == "" && cfg.PrivateKeyPath == "") {
		// Without App credentials nothing can be done on GitHub: deliveries
		// are still verified and stored, and the jobs wait (never lost)
		// until the server is restarted with credentials.
		return server.Deps{Ready: []handlers.ReadyCheck{ready},
			Hold: "no GitHub App credentials: set SELFCODE_APP_ID and SELFCODE_PRIVATE_KEY or SELFCODE_PRIVATE_KEY_PATH (selfcode setup writes them)"}, nil
	}
	p, err := wire.Pipeline(wire.PipelineOptions{Config: cfg, Logger: log, Metrics: m, Sandbox: sb})
	if err != nil {
		return server.Deps{}, err
	}
	return wire.GitHub(wire.Options{Config: cfg, Logger: log, Engine: engine.Engine{Pipeline: p},
		Ready: []handlers.ReadyCheck{ready}})(ctx, st, m, instance)
}

func extraCommands() []*cobra.Command {
	return []*cobra.Command{runCmd(), demoCmd(), setupCmd(), backupCmd(), configCmd()}
}
