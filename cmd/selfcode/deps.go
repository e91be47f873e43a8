package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/metrics"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/app/wire"
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
		return wire.Deps(ctx, cfg, log, st, m, instance)
	}
}

func extraCommands() []*cobra.Command {
	return []*cobra.Command{runCmd(), demoCmd(), setupCmd(), backupCmd(), configCmd()}
}
