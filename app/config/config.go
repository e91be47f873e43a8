package config

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Config is selfcode's server configuration (contract section 2). Each field
// names its environment variable and its YAML key; the environment wins over
// the YAML file, and the YAML file over the defaults.
//
// The struct tags are the single table everything else is derived from:
// env (variable name), yaml (file key), default, secret (redacted when
// rendered), check (validation rules, see checks.go) and desc (documentation).
type Config struct {
	Addr                 string        `env:"SELFCODE_ADDR" yaml:"addr" default:":8080" check:"addr" desc:"public listener: /webhook, /healthz, /readyz"`
	AdminAddr            string        `env:"SELFCODE_ADMIN_ADDR" yaml:"admin_addr" default:"127.0.0.1:9090" check:"addr" desc:"admin listener: /metrics, /api/..., dashboard"`
	DataDir              string        `env:"SELFCODE_DATA_DIR" yaml:"data_dir" default:"./data" check:"nonempty" desc:"directory for the bbolt file selfcode.db, git mirrors and workspaces"`
	WebhookSecret        string        `env:"SELFCODE_WEBHOOK_SECRET" yaml:"webhook_secret" secret:"true" desc:"GitHub webhook secret; required by serve"`
	AppID                int64         `env:"SELFCODE_APP_ID" yaml:"app_id" check:"nonnegative" desc:"GitHub App id"`
	PrivateKey           string        `env:"SELFCODE_PRIVATE_KEY" yaml:"private_key" secret:"true" desc:"GitHub App private key, PEM text (alternative to private_key_path)"`
	PrivateKeyPath       string        `env:"SELFCODE_PRIVATE_KEY_PATH" yaml:"private_key_path" desc:"path of a file holding the GitHub App private key (PEM)"`
	GitHubAPIURL         string        `env:"SELFCODE_GITHUB_API_URL" yaml:"github_api_url" default:"https://api.github.com/" check:"url" desc:"GitHub REST base URL (GHES: https://HOST/api/v3/)"`
	LLMBaseURL           string        `env:"SELFCODE_LLM_BASE_URL" yaml:"llm_base_url" default:"https://api.openai.com/v1" check:"url" desc:"base URL of any OpenAI-compatible endpoint"`
	LLMAPIKey            string        `env:"SELFCODE_LLM_API_KEY" yaml:"llm_api_key" secret:"true" desc:"model API key; falls back to OPENAI_API_KEY"` // falls back to OPENAI_API_KEY
	LLMModel             string        `env:"SELFCODE_LLM_MODEL" yaml:"llm_model" default:"gpt-4.1" check:"nonempty" desc:"default model for every role"`
	LLMModelPlanner      string        `env:"SELFCODE_LLM_MODEL_PLANNER" yaml:"llm_model_planner" desc:"model for the planner role (empty: llm_model)"`
	LLMModelEditor       string        `env:"SELFCODE_LLM_MODEL_EDITOR" yaml:"llm_model_editor" desc:"model for the editor role (empty: llm_model)"`
	LLMModelFixer        string        `env:"SELFCODE_LLM_MODEL_FIXER" yaml:"llm_model_fixer" desc:"model for the fixer role (empty: llm_model)"`
	LLMModelReporter     string        `env:"SELFCODE_LLM_MODEL_REPORTER" yaml:"llm_model_reporter" desc:"model for the reporter role (empty: llm_model)"`
	SandboxImage         string        `env:"SELFCODE_SANDBOX_IMAGE" yaml:"sandbox_image" default:"selfcode-sandbox:latest" check:"nonempty" desc:"sandbox image when the repository names none"`
	SandboxRuntime       string        `env:"SELFCODE_SANDBOX_RUNTIME" yaml:"sandbox_runtime" desc:"OCI runtime for job containers, e.g. runsc for gVisor; empty: the engine's default (startup logs which runtimes the engine has)"`
	SandboxMemoryMB      int64         `env:"SELFCODE_SANDBOX_MEMORY_MB" yaml:"sandbox_memory_mb" default:"2048" check:"positive" desc:"memory of a job container in MiB (swap is not allowed on top)"`
	SandboxMilliCPUs     int64         `env:"SELFCODE_SANDBOX_MILLICPUS" yaml:"sandbox_millicpus" default:"1000" check:"positive" desc:"CPU of a job container in thousandths of a CPU"`
	SandboxPids          int64         `env:"SELFCODE_SANDBOX_PIDS" yaml:"sandbox_pids" default:"512" check:"positive" desc:"processes and threads a job container may have"`
	CacheMaxBytes        int64         `env:"SELFCODE_CACHE_MAX_BYTES" yaml:"cache_max_bytes" default:"10737418240" check:"nonnegative" desc:"total size of the per-repository sandbox caches (Go build and modules, npm, pip); past it the least recently used are removed; 0 turns caches off"`
	SandboxEnv           string        `env:"SELFCODE_SANDBOX_ENV" yaml:"sandbox_env" check:"envlist" desc:"variables every sandbox command sees, as NAME=value pairs separated by semicolons: the mirrors setup fetches from (GOPROXY, npm_config_registry, PIP_INDEX_URL); names that look like secrets are refused"`
	Workers              int           `env:"SELFCODE_WORKERS" yaml:"workers" default:"2" check:"positive" desc:"jobs run at once"`
	Command              string        `env:"SELFCODE_COMMAND" yaml:"command" default:"/selfcode" check:"word" desc:"comment command word"`
	Label                string        `env:"SELFCODE_LABEL" yaml:"label" default:"selfcode" check:"nonempty" desc:"label that starts a job now"`
	OvernightLabel       string        `env:"SELFCODE_OVERNIGHT_LABEL" yaml:"overnight_label" default:"selfcode:overnight" check:"nonempty" desc:"label that schedules a job for the overnight window"`
	OvernightSchedule    string        `env:"SELFCODE_OVERNIGHT_SCHEDULE" yaml:"overnight_schedule" default:"0 2 * * *" check:"cron" desc:"cron expression (5 fields) of the overnight window start"`
	Timezone             string        `env:"SELFCODE_TIMEZONE" yaml:"timezone" default:"UTC" check:"timezone" desc:"IANA time zone of the schedule"`
	OvernightMaxDuration time.Duration `env:"SELFCODE_OVERNIGHT_MAX_DURATION" yaml:"overnight_max_duration" default:"45m" check:"positive" desc:"time limit per overnight job"`
	ReportWebhookURL     string        `env:"SELFCODE_REPORT_WEBHOOK_URL" yaml:"report_webhook_url" check:"url" desc:"where the morning report is POSTed (empty: off)"`
	DailyTokenBudget     int64         `env:"SELFCODE_DAILY_TOKEN_BUDGET" yaml:"daily_token_budget" default:"0" check:"nonnegative" desc:"model tokens per installation per day (0: off)"`
	Enabled              bool          `env:"SELFCODE_ENABLED" yaml:"enabled" default:"true" desc:"false is the kill switch: jobs are stored but stay queued"`
	CIApps               string        `env:"SELFCODE_CI_APPS" yaml:"ci_apps" default:"github-actions" check:"slugs" desc:"comma-separated slugs of the GitHub Apps whose failing check runs may start a CI follow-up on selfcode's pull requests, and whose checks fix-ci reads (empty: none); other apps' checks are ignored"`

	// Operational settings beyond the contract's table.
	PublicURL       string        `env:"SELFCODE_PUBLIC_URL" yaml:"public_url" check:"url" desc:"the address GitHub reaches the public listener at (https://HOST; webhooks go to <it>/webhook); selfcode doctor checks it reaches this server (empty: the App's webhook URL)"`
	TemplatesDir    string        `env:"SELFCODE_TEMPLATES_DIR" yaml:"templates_dir" desc:"folder of *.tmpl files that override report template blocks (templates/); checked at startup"`
	PromptsDir      string        `env:"SELFCODE_PROMPTS_DIR" yaml:"prompts_dir" desc:"folder of prompt files that override the embedded ones (prompts/); checked at startup"`
	ShutdownTimeout time.Duration `env:"SELFCODE_SHUTDOWN_TIMEOUT" yaml:"shutdown_timeout" default:"30s" check:"positive" desc:"how long serve waits for running work on shutdown"`
	LogLevel        string        `env:"SELFCODE_LOG_LEVEL" yaml:"log_level" default:"info" check:"loglevel" desc:"log level: debug, info, warn or error"`
	OvernightWindow time.Duration `env:"SELFCODE_OVERNIGHT_WINDOW" yaml:"overnight_window" default:"6h" check:"positive" desc:"how long each overnight window lasts (never past the next window's start); jobs still waiting then move to the next window"`
	DailyCostBudget float64       `env:"SELFCODE_DAILY_COST_BUDGET" yaml:"daily_cost_budget" default:"0" check:"nonnegative" desc:"dollars of model use per installation per day (0: off), checked before every model call like the daily token budget; every configured model needs a price (model_prices or a default)"`
	ModelPrices     string        `env:"SELFCODE_MODEL_PRICES" yaml:"model_prices" check:"prices" desc:"model prices in dollars per million tokens, as MODEL=INPUT,CACHED_INPUT,OUTPUT entries separated by semicolons (e.g. gpt-4.1=2,0.5,8); they override the defaults for common OpenAI models; a model with no price costs unknown"`
	PublishGrace    time.Duration `env:"SELFCODE_PUBLISH_GRACE" yaml:"publish_grace" default:"2m" check:"positive" desc:"how long a job stopped at a time limit (limits.job_timeout, overnight_max_duration) may still take to publish its work so far as a draft"`
	SmokeEnabled    bool          `env:"SELFCODE_SMOKE_ENABLED" yaml:"smoke_enabled" default:"true" desc:"false turns the smoke stage off for every repository (smoke: in .selfcode.yml: build the repository's image and probe a throwaway container of it); the report then says it was skipped. When true the stage runs where the Docker engine builds images (its containers need no network: selfcode reaches them through the engine), and is skipped with the reason elsewhere"`

	// Derived in Load from Timezone and OvernightSchedule.
	loc      *time.Location
	schedule cron.Schedule
}
