package wire

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/ghapp"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/app/metrics"
	"github.com/selfcode/selfcode/app/runner"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/app/store"
	"github.com/selfcode/selfcode/handlers"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/templates"
)

// Options configures GitHub.
type Options struct {
	Config *config.Config
	Logger *slog.Logger
	// Engine does the work on a checkout (the pipeline).
	Engine runner.Engine
	// Ready adds readiness checks (e.g. the Docker engine).
	Ready []handlers.ReadyCheck
	// Model is the one model client (the pipeline's); it also writes the
	// morning report's narrative. nil: the server builds one.
	Model chat.Model
	// GitHub overrides the client factory options (tests shorten backoffs).
	GitHub func(*gh.Options)
}

// GitHub returns the server.Deps builder for a GitHub App.
func GitHub(o Options) func(ctx context.Context, st *store.Store, m *metrics.Metrics, instance string) (server.Deps, error) {
	return func(ctx context.Context, st *store.Store, m *metrics.Metrics, instance string) (server.Deps, error) {
		cfg := o.Config
		log := o.Logger
		if log == nil {
			log = slog.Default()
		}
		if cfg.AppID == 0 {
			return server.Deps{}, errs.E(errs.KindInvalid, "SELFCODE_APP_ID is required (run `selfcode setup` to register the App)", nil)
		}
		key, err := cfg.PrivateKeyPEM()
		if err != nil {
			return server.Deps{}, err
		}
		if o.Engine == nil {
			return server.Deps{}, errs.E(errs.KindInvalid, "no pipeline engine", nil)
		}
		gopts := gh.Options{AppID: cfg.AppID, PrivateKeyPEM: key, BaseURL: cfg.GitHubAPIURL, Logger: log, HTTPTimeout: 30 * time.Second}
		if o.GitHub != nil {
			o.GitHub(&gopts)
		}
		factory, err := gh.New(gopts)
		if err != nil {
			return server.Deps{}, err
		}
		tm, err := templates.New(templates.Options{OverrideDir: o.Config.TemplatesDir})
		if err != nil {
			return server.Deps{}, err
		}
		identity := func(ctx context.Context) (gitops.Identity, error) {
			app, err := factory.App(ctx)
			if err != nil {
				return gitops.Identity{}, ghapp.MapError(err)
			}
			return gitops.Identity{Name: app.BotLogin, Email: app.BotEmail}, nil
		}
		run, err := runner.New(runner.Options{
			Clients: factory, Templates: tm, Engine: o.Engine, CommandWord: cfg.Command, Logger: log, History: st,
			Git: runner.LazyGit(identity, gitops.Options{Dir: filepath.Join(cfg.DataDir, "git"), Logger: log}),
		})
		if err != nil {
			return server.Deps{}, err
		}
		botLogin := ""
		if app, err := factory.App(ctx); err == nil {
			botLogin = app.BotLogin
		} else {
			log.Warn("could not read the app's identity yet; bot comments are still ignored by type", "err", err)
		}
		return server.Deps{
			Runner:      run,
			Permissions: ghapp.Permissions{Source: gh.NewPermissionChecker(gh.PermissionCheckerOptions{Clients: factory}), BotLogin: botLogin},
			Notifier: ghapp.NewNotifier(ghapp.NotifierOptions{Clients: factory, Templates: tm, CommandWord: cfg.Command,
				Label: cfg.Label, OvernightLabel: cfg.OvernightLabel, Logger: log}),
			Ready:    o.Ready,
			GitHub:   factory, // overnight outcome comments, label swaps, budget notices
			Reporter: o.Model,
		}, nil
	}
}
