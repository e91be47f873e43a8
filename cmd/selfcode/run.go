package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode/app/demo"
	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/localrun"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/templates"
)

func runCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "run --repo DIR --task TEXT [--base BRANCH]",
		Short: "Run the pipeline once on a local git checkout; the result is left on branch selfcode/local-<id>",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			repo, _ := cmd.Flags().GetString("repo")
			task, _ := cmd.Flags().GetString("task")
			base, _ := cmd.Flags().GetString("base")
			if repo == "" || task == "" {
				return &exitError{code: 2, err: errors.New("--repo and --task are required")}
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			log := newLogger(cfg)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if err := ensureImage(ctx, cfg, cmd.ErrOrStderr()); err != nil {
				return &exitError{code: 1, err: err}
			}
			sb, _, err := server.Sandbox(ctx, cfg, "local-"+fmt.Sprint(os.Getpid()), log)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			defer sb.Close()
			p, err := server.Pipeline(server.PipelineOptions{Config: cfg, Logger: log, Sandbox: sb})
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			tm, err := templates.New(templates.Options{})
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			res, err := localrun.Run(ctx, localrun.Options{RepoDir: repo, Task: task, Base: base, Pipeline: p, Templates: tm, Logger: log})
			if res != nil {
				fmt.Fprintln(cmd.OutOrStdout(), res.Report)
				if res.Branch != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "selfcode: result on branch %s\n", res.Branch)
				}
			}
			switch {
			case errs.Is(err, errs.KindInvalid):
				return &exitError{code: 2, err: err}
			case err != nil:
				return &exitError{code: 1, err: err}
			case !res.Verified:
				return &exitError{code: 1, err: errors.New("the change is not verified")}
			}
			return nil
		},
	}
	c.Flags().String("repo", "", "local git checkout")
	c.Flags().String("task", "", "what to change")
	c.Flags().String("base", "", "branch or commit to start from (default: the checked-out one)")
	return c
}

func demoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "The whole loop on this machine: simulated GitHub, real queue, sandbox and publishing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			_, err = demo.Run(ctx, demo.Options{Out: cmd.OutOrStdout(), Config: cfg, UseConfiguredModel: modelConfigured(),
				EnsureImage: func(ctx context.Context, out io.Writer) error { return ensureImage(ctx, cfg, out) }})
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
}

// modelConfigured reports whether the environment names a model endpoint
// or key; without one the demo replays its recorded transcript.
func modelConfigured() bool {
	for _, k := range []string{"SELFCODE_LLM_BASE_URL", "SELFCODE_LLM_API_KEY", "OPENAI_API_KEY"} {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}
