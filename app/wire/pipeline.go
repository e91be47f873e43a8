package wire

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/engine"
	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/app/metrics"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/handlers"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/chat"
	"github.com/selfcode/selfcode/pipeline/verify"
	"github.com/selfcode/selfcode/prompts"
)

// PipelineOptions configures Pipeline.
type PipelineOptions struct {
	Config  *config.Config
	Logger  *slog.Logger
	Metrics *metrics.Metrics // may be nil
	// Sandbox runs verification; nil builds none (verification then fails
	// with a clear error).
	Sandbox *sandbox.Manager
	// Model overrides the configured OpenAI-compatible endpoint (the demo
	// replays a recorded transcript through a fake server instead).
	Model chat.Model
}

// Model builds the OpenAI-compatible client from the configuration.
func Model(cfg *config.Config, log *slog.Logger) (*llm.Client, error) {
	models := map[chat.Role]string{}
	for _, r := range []chat.Role{chat.RolePlanner, chat.RoleEditor, chat.RoleFixer, chat.RoleReporter} {
		models[r] = cfg.ModelFor(string(r))
	}
	return llm.New(llm.Options{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Models: models, Logger: log})
}

// Pipeline builds the pipeline: model, prompts, sandbox adapter, baseline
// cache under the data directory, metrics.
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
	cache, err := verify.NewCache(verify.CacheOptions{Dir: filepath.Join(o.Config.DataDir, "baselines")})
	if err != nil {
		return nil, err
	}
	po := pipeline.Options{Model: model, Prompts: ps, Baseline: cache, Logger: log}
	if o.Sandbox != nil {
		po.Sandbox = engine.Sandbox{Manager: o.Sandbox}
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
		Limits: sandbox.Limits{Memory: cfg.SandboxMemoryMB << 20, CPUs: float64(cfg.SandboxMilliCPUs) / 1000, Pids: cfg.SandboxPids}})
	if err != nil {
		return nil, handlers.ReadyCheck{}, err
	}
	return m, handlers.ReadyCheck{Name: "docker", Check: m.Ping}, nil
}
