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
			repo, _ := cmd.Flags().GetString("repo")
			limit, _ := cmd.Flags().GetInt("limit")
			jsonPath, _ := cmd.Flags().GetString("json")
			fresh, _ := cmd.Flags().GetBool("fresh")
			if repo == "" {
				return &exitError{code: 2, err: errors.New("--repo is required")}
			}
			if limit < 1 {
				return &exitError{code: 2, err: fmt.Errorf("--limit %d: evaluate at least one commit", limit)}
			}
			if jsonPath != "" {
				if fi, err := os.Stat(filepath.Dir(jsonPath)); err != nil || !fi.IsDir() {
					return &exitError{code: 2, err: fmt.Errorf("--json %s: its folder does not exist", jsonPath)}
				}
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			log := evalLogger(cfg)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if _, _, err := eval.Repository(ctx, repo); err != nil {
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
			issues, note := eval.GitHubIssues(ctx, repo, cfg.GitHubAPIURL, clients)
			models := map[chat.Role]string{}
			for _, r := range []chat.Role{chat.RolePlanner, chat.RoleEditor, chat.RoleFixer} {
				models[r] = cfg.ModelFor(string(r))
			}
			rep, err := eval.Run(ctx, eval.Options{RepoDir: repo, Limit: limit, Fresh: fresh, Workers: cfg.Workers,
				Model: model, Models: models, Pricer: cfg.Prices(),
				Pipeline: func(m chat.Model) (*pipeline.Pipeline, error) {
					return server.Pipeline(server.PipelineOptions{Config: cfg, Logger: log, Sandbox: sb, Model: m})
				},
				StoreDir: filepath.Join(cfg.DataDir, "eval"), Fingerprint: evalFingerprint(cfg),
				Issues: issues, IssuesNote: note, Progress: cmd.ErrOrStderr(), Logger: log})
			if errs.Is(err, errs.KindInvalid) {
				return &exitError{code: 2, err: err}
			}
			if rep != nil {
				if werr := rep.WriteTable(cmd.OutOrStdout()); werr != nil {
					return &exitError{code: 1, err: werr}
				}
				if jsonPath != "" {
					if werr := writeJSONFile(jsonPath, rep); werr != nil {
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
