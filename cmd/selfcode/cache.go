package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/app/server"
)

func cacheCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "cache",
		Short: "List or clear the per-repository sandbox caches (Go build and modules, npm, pip, installed dependencies)",
		Long: `Each repository's jobs mount that repository's own cache volume in the sandbox,
so its second job starts warm: build and package caches, and what setup installed
(node_modules, the virtual environment) for the current dependency manifests. Caches are dropped when the sandbox image
changes and the least recently used go past SELFCODE_CACHE_MAX_BYTES.
A cache a running job uses is left in place by clear. Clear also removes the
repository's verified baselines (SELFCODE_DATA_DIR/baselines), so its base
commits are verified again.`,
		Args: cobra.NoArgs,
	}
	c.PersistentFlags().String("repo", "", "only this repository (OWNER/NAME)")
	c.AddCommand(&cobra.Command{
		Use:   "list [--repo OWNER/NAME]",
		Short: "List the caches, least recently used first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCaches(cmd, func(ctx context.Context, _ *config.Config, m *sandbox.Manager, repo string) error {
				caches, err := m.Caches(ctx)
				if err != nil {
					return err
				}
				return printCaches(cmd.OutOrStdout(), caches, repo)
			})
		},
	}, &cobra.Command{
		Use:   "clear [--repo OWNER/NAME]",
		Short: "Remove the caches and verified baselines (of one repository, or all)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCaches(cmd, func(ctx context.Context, cfg *config.Config, m *sandbox.Manager, repo string) error {
				baselines, err := server.Baselines(cfg)
				if err != nil {
					return err
				}
				r, err := server.Caches{Sandbox: m, Baselines: baselines}.Clear(ctx, repo)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %d cache(s) and %d baseline(s)", r.Volumes, r.Baselines)
				if r.InUse > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "; %d in use by a running job, left in place", r.InUse)
				}
				fmt.Fprintln(cmd.OutOrStdout())
				return nil
			})
		},
	})
	return c
}

// withCaches runs fn with the configuration and a sandbox manager for the
// configured engine.
func withCaches(cmd *cobra.Command, fn func(ctx context.Context, cfg *config.Config, m *sandbox.Manager, repo string) error) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	repo, _ := cmd.Flags().GetString("repo")
	if repo != "" {
		if err := sandbox.CheckRepository(repo); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	quiet := slog.New(slog.DiscardHandler)
	m, _, err := server.Sandbox(ctx, cfg, "cache-cli", quiet)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	defer m.Close()
	if err := m.Ping(ctx); err != nil {
		return &exitError{code: 1, err: err}
	}
	if err := fn(ctx, cfg, m, repo); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

func printCaches(out io.Writer, caches []sandbox.CacheInfo, repo string) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "REPOSITORY\tSIZE\tLAST USED\tVOLUME")
	var total int64
	for _, c := range caches {
		if repo != "" && c.Repository != repo {
			continue
		}
		size := "?"
		if c.Size >= 0 {
			size = fmt.Sprintf("%.1f MiB", float64(c.Size)/(1<<20))
			total += c.Size
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Repository, size, c.LastUsed.UTC().Format(time.RFC3339), c.Volume)
	}
	fmt.Fprintf(w, "total\t%.1f MiB\t\t\n", float64(total)/(1<<20))
	return w.Flush()
}
