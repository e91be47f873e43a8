package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/ghapp"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/job"
	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/app/metrics"
	"github.com/selfcode/selfcode/app/runner"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/app/worker"
	"github.com/selfcode/selfcode/handlers"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/prompts"
	"github.com/selfcode/selfcode/templates"
)

// Parts are the parts of a running server that act on the outside world
// for a job: who may trigger it, the replies it owes, and the runner that
// does it.
type Parts struct {
	Runner      worker.Runner
	Permissions worker.PermissionChecker
	Notifier    worker.Notifier
	// Hold, when set, keeps every job stored and queued and says why (the
	// worker pool then needs no Runner, Permissions or Notifier).
	Hold string
	// GitHub, when set, comments on and relabels issues after overnight
	// jobs and when the daily token budget holds a job back.
	GitHub ghapp.Clients
}

// noCredentials is why jobs are held when the App is not configured.
const noCredentials = "no GitHub App credentials: set SELFCODE_APP_ID and SELFCODE_PRIVATE_KEY or SELFCODE_PRIVATE_KEY_PATH (selfcode setup writes them)"

// parts builds the job parts from the configuration: the sandbox manager
// (which reaps what a crashed previous run left) and its readiness check,
// the pipeline on the one model client, and the GitHub App side around it.
// Without App credentials the jobs are held: stored and queued, never
// lost, until a restart with them.
func (s *Server) parts(ctx context.Context, o Options) (Parts, error) {
	if o.Parts != nil {
		return *o.Parts, nil
	}
	cfg := s.cfg
	pipe := o.Pipeline
	if pipe == nil && o.Sandbox != nil {
		var err error
		if pipe, err = Pipeline(PipelineOptions{Config: cfg, Logger: s.log, Metrics: s.Metrics, Backend: o.Sandbox, Model: s.model}); err != nil {
			return Parts{}, err
		}
	}
	if pipe == nil {
		sb, ready, err := Sandbox(ctx, cfg, s.Instance, s.log)
		if err != nil {
			return Parts{}, err
		}
		s.closers = append(s.closers, sb.Close)
		s.ready = append(s.ready, ready)
		baselines, err := Baselines(cfg)
		if err != nil {
			return Parts{}, err
		}
		s.caches, s.sandbox = Caches{Sandbox: sb, Baselines: baselines}, sb
		if !cfg.HasAppCredentials() {
			return Parts{Hold: noCredentials}, nil
		}
		if pipe, err = Pipeline(PipelineOptions{Config: cfg, Logger: s.log, Metrics: s.Metrics, Sandbox: sb, Model: s.model}); err != nil {
			return Parts{}, err
		}
	}
	return s.gitHubParts(ctx, o, pipe)
}

// gitHubParts builds the client factory, permission checker, notifier and
// the job runner around pipe.
func (s *Server) gitHubParts(ctx context.Context, o Options, pipe runner.Pipeline) (Parts, error) {
	cfg, log := s.cfg, s.log
	if cfg.AppID == 0 {
		return Parts{}, errs.E(errs.KindInvalid, "SELFCODE_APP_ID is required (run `selfcode setup` to register the App)", nil)
	}
	key, err := cfg.PrivateKeyPEM()
	if err != nil {
		return Parts{}, err
	}
	gopts := gh.Options{AppID: cfg.AppID, PrivateKeyPEM: key, BaseURL: cfg.GitHubAPIURL, Logger: log, HTTPTimeout: 30 * time.Second}
	if o.GitHub != nil {
		o.GitHub(&gopts)
	}
	factory, err := gh.New(gopts)
	if err != nil {
		return Parts{}, err
	}
	tm, err := templates.New(templates.Options{OverrideDir: cfg.TemplatesDir})
	if err != nil {
		return Parts{}, err
	}
	identity := func(ctx context.Context) (gitops.Identity, error) {
		app, err := factory.App(ctx)
		if err != nil {
			return gitops.Identity{}, ghapp.MapError(err)
		}
		return gitops.Identity{Name: app.BotLogin, Email: app.BotEmail}, nil
	}
	run, err := runner.New(runner.Options{
		Clients: factory, Templates: tm, Pipeline: pipe, CommandWord: cfg.Command, Logger: log, History: s.Store, CIApps: cfg.CIAppSlugs(),
		Git: runner.LazyGit(identity, gitops.Options{Dir: filepath.Join(cfg.DataDir, "git"), Logger: log}),
		// The daily budgets are built with the overnight scheduler, after
		// the parts; jobs run only once the server is built.
		Budget: func(j *job.Job) pipeline.Budget { return s.budget.Job(j) },
	})
	if err != nil {
		return Parts{}, err
	}
	botLogin := ""
	if app, err := factory.App(ctx); err == nil {
		botLogin = app.BotLogin
	} else {
		log.Warn("could not read the app's identity yet; bot comments are still ignored by type", "err", err)
	}
	return Parts{
		Runner:      run,
		Permissions: ghapp.Permissions{Source: gh.NewPermissionChecker(gh.PermissionCheckerOptions{Clients: factory}), BotLogin: botLogin},
		Notifier: ghapp.NewNotifier(ghapp.NotifierOptions{Clients: factory, Templates: tm, CommandWord: cfg.Command,
			Label: cfg.Label, OvernightLabel: cfg.OvernightLabel, Logger: log}),
		GitHub: factory, // overnight outcome comments, label swaps, budget notices
	}, nil
}

// PipelineOptions configures Pipeline.
type PipelineOptions struct {
	Config  *config.Config
	Logger  *slog.Logger
	Metrics *metrics.Metrics // may be nil
	// Sandbox runs verification; nil builds none (verification then fails
	// with a clear error).
	Sandbox *sandbox.Manager
	// Backend, when set, is the sandbox backend instead of Sandbox's.
	Backend pipeline.Sandbox
	// Model is the one model client; nil builds one from the configuration.
	Model chat.Model
}

// Model builds the OpenAI-compatible client from the configuration: one
// client for every role, the morning report's too.
func Model(cfg *config.Config, log *slog.Logger) (*llm.Client, error) {
	models := map[chat.Role]string{}
	for _, r := range []chat.Role{chat.RolePlanner, chat.RoleEditor, chat.RoleFixer, chat.RoleReporter} {
		models[r] = cfg.ModelFor(string(r))
	}
	return llm.New(llm.Options{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Models: models, Logger: log})
}

// Pipeline builds the pipeline: model, prompts (SELFCODE_PROMPTS_DIR),
// sandbox backend and smoke engine (SELFCODE_SMOKE_ENABLED), baseline cache
// under the data directory, metrics.
// `selfcode run` uses it too.
func Pipeline(o PipelineOptions) (*pipeline.Pipeline, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	model := o.Model
	if model == nil {
		m, err := Model(o.Config, log)
		if err != nil {
			return nil, err
		}
		model = m
	}
	ps, err := prompts.Load(prompts.Options{Dir: o.Config.PromptsDir})
	if err != nil {
		return nil, err
	}
	cache, err := Baselines(o.Config)
	if err != nil {
		return nil, err
	}
	po := pipeline.Options{Model: model, Prompts: ps, Baseline: cache, Logger: log, Prices: o.Config.Prices()}
	switch {
	case o.Backend != nil:
		po.Sandbox = o.Backend
	case o.Sandbox != nil:
		po.Sandbox = sandbox.Backend{Manager: o.Sandbox}
		po.Smoke = sandbox.SmokeBackend{Manager: o.Sandbox}
	}
	if !o.Config.SmokeEnabled {
		po.SmokeOff = "turned off on this server (SELFCODE_SMOKE_ENABLED=false)"
	}
	if o.Metrics != nil {
		po.Observer = o.Metrics
	}
	return pipeline.New(po)
}

// Sandbox starts the sandbox manager for this instance (it reaps what a
// crashed previous run left) and returns its readiness check.
func Sandbox(ctx context.Context, cfg *config.Config, instance string, log *slog.Logger) (*sandbox.Manager, handlers.ReadyCheck, error) {
	env, err := config.ParseEnvList(cfg.SandboxEnv)
	if err != nil {
		return nil, handlers.ReadyCheck{}, fmt.Errorf("SELFCODE_SANDBOX_ENV: %w", err)
	}
	m, err := sandbox.New(ctx, sandbox.Options{Instance: instance, Image: cfg.SandboxImage, Runtime: cfg.SandboxRuntime, Logger: log, Env: env,
		Cache:  sandbox.CacheOptions{MaxBytes: cfg.CacheMaxBytes, Index: filepath.Join(cfg.DataDir, "caches.json")},
		Limits: sandbox.Limits{Memory: cfg.SandboxMemoryMB << 20, CPUs: float64(cfg.SandboxMilliCPUs) / 1000, Pids: cfg.SandboxPids}})
	if err != nil {
		return nil, handlers.ReadyCheck{}, err
	}
	return m, handlers.ReadyCheck{Name: "docker", Check: m.Ping}, nil
}

// runningJobs tells the sandbox reaper which jobs still run: those the
// store has in state running. A job the store does not know runs no longer.
type runningJobs struct{ st *store.Store }

func (r runningJobs) Running(ctx context.Context, id string) (bool, error) {
	j, err := r.st.Get(ctx, id)
	switch {
	case errs.Is(err, errs.KindNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return j.State == job.StateRunning, nil
}
