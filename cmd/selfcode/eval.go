package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/eval"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
)

func evalCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "eval --repo DIR [--limit N] [--json FILE] [--fresh]",
		Short: "Score the pipeline and the configured model on the repository's own fixed bugs, their tests held back",
		Long: "Replays commits that change source and test files together as tasks: the pipeline runs on each commit's " +
			"first parent with the commit message as the task, then the commit's tests (held back from the model) grade " +
			"the result test by test. See docs/eval.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := readEvalFlags(cmd)
			if err != nil {
				return err
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			log := evalLogger(cfg)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if _, _, err := eval.Repository(ctx, f.repo); err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := ensureImage(ctx, cfg, cmd.ErrOrStderr()); err != nil {
				return &exitError{code: 1, err: err}
			}
			sb, _, err := server.Sandbox(ctx, cfg, "eval-"+fmt.Sprint(os.Getpid()), log)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			defer sb.Close()
			model, err := server.Model(cfg, log)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			clients, err := appClients(cfg, log)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			o := evalOptions(cfg, f)
			o.Model, o.Logger, o.Progress = model, log, cmd.ErrOrStderr()
			o.Pipeline = func(m chat.Model) (*pipeline.Pipeline, error) {
				return server.Pipeline(server.PipelineOptions{Config: cfg, Logger: log, Sandbox: sb, Model: m})
			}
			o.Issues, o.IssuesNote = eval.GitHubIssues(ctx, f.repo, cfg.GitHubAPIURL, clients)
			rep, err := eval.Run(ctx, o)
			if errs.Is(err, errs.KindInvalid) {
				return &exitError{code: 2, err: err}
			}
			if rep != nil {
				if werr := rep.WriteTable(cmd.OutOrStdout()); werr != nil {
					return &exitError{code: 1, err: werr}
				}
				if f.json != "" {
					if werr := writeJSONFile(f.json, rep); werr != nil {
						return &exitError{code: 1, err: werr}
					}
				}
			}
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
	c.Flags().String("repo", "", "local git checkout whose history is evaluated")
	c.Flags().Int("limit", eval.DefaultLimit, "how many commits to evaluate, newest first")
	c.Flags().String("json", "", "also write the results as JSON to this file")
	c.Flags().Bool("fresh", false, "run again the tasks an earlier run finished (they are kept in the data directory)")
	return c
}

// evalFlags are the eval command's flags.
type evalFlags struct {
	repo, json string
	limit      int
	fresh      bool
}

// readEvalFlags reads and checks the flags; bad usage exits 2.
func readEvalFlags(cmd *cobra.Command) (evalFlags, error) {
	var f evalFlags
	f.repo, _ = cmd.Flags().GetString("repo")
	f.limit, _ = cmd.Flags().GetInt("limit")
	f.json, _ = cmd.Flags().GetString("json")
	f.fresh, _ = cmd.Flags().GetBool("fresh")
	if f.repo == "" {
		return f, &exitError{code: 2, err: errors.New("--repo is required")}
	}
	if f.limit < 1 {
		return f, &exitError{code: 2, err: fmt.Errorf("--limit %d: evaluate at least one commit", f.limit)}
	}
	if f.json != "" {
		if fi, err := os.Stat(filepath.Dir(f.json)); err != nil || !fi.IsDir() {
			return f, &exitError{code: 2, err: fmt.Errorf("--json %s: its folder does not exist", f.json)}
		}
	}
	return f, nil
}

// evalOptions is what the flags and the configuration tell eval: the
// commits, tasks at once (SELFCODE_WORKERS), the models, prices, and where
// results are kept. The model, the pipeline, the issues and the output
// are the command's to add.
func evalOptions(cfg *config.Config, f evalFlags) eval.Options {
	models := map[chat.Role]string{}
	for _, r := range []chat.Role{chat.RolePlanner, chat.RoleEditor, chat.RoleFixer} {
		models[r] = cfg.ModelFor(string(r))
	}
	return eval.Options{RepoDir: f.repo, Limit: f.limit, Fresh: f.fresh, Workers: cfg.Workers, Models: models, Pricer: cfg.Prices(),
		StoreDir: filepath.Join(cfg.DataDir, "eval"), Fingerprint: evalFingerprint(cfg)}
}

// evalLogger logs warnings and errors only unless the configuration asks
// for debug logs: eval's own progress lines say what happens.
func evalLogger(cfg *config.Config) *slog.Logger {
	level := cfg.SlogLevel()
	if level > slog.LevelDebug && level < slog.LevelWarn {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// appClients is the GitHub App's client factory, or nil without App
// credentials (linked issues are then not read, and the output says so).
func appClients(cfg *config.Config, log *slog.Logger) (eval.RepoClients, error) {
	if !cfg.HasAppCredentials() {
		return nil, nil
	}
	key, err := cfg.PrivateKeyPEM()
	if err != nil {
		return nil, err
	}
	f, err := gh.New(gh.Options{AppID: cfg.AppID, PrivateKeyPEM: key, BaseURL: cfg.GitHubAPIURL, Logger: log, HTTPTimeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// evalFingerprint is what besides the repository, the commit and the
// models decides a task's result: the endpoint, the sandbox image, the
// prompts and selfcode itself. A change of any runs the tasks again.
func evalFingerprint(cfg *config.Config) string {
	return fmt.Sprintf("endpoint=%s\x00image=%s\x00prompts=%s\x00selfcode=%s", cfg.LLMBaseURL, cfg.SandboxImage, cfg.PromptsDir, versionString())
}

func writeJSONFile(path string, rep *eval.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
