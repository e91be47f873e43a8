package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/server"
)

func loadConfig(cmd *cobra.Command) (*config.Config, error) {
	file, _ := cmd.Flags().GetString("config")
	cfg, err := config.Load(config.LoadOptions{File: file, Environ: os.Environ()})
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	return cfg, nil
}

func newLogger(cfg *config.Config) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.SlogLevel()}))
}

func serveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the GitHub App: webhook intake, workers, scheduler and admin API",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			if err := cfg.ValidateServe(); err != nil {
				return &exitError{code: 2, err: err}
			}
			log := newLogger(cfg)
			log.Info("configuration", "config", cfg)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			startupChecks(ctx, cfg, log)
			srv, err := server.New(ctx, server.Options{Config: cfg, Logger: log, Parts: testParts(cfg, log), BuildImage: true, Image: imageOptions(cfg)})
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if err := srv.Run(ctx); err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
}
