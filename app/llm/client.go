package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/selfcode/selfcode/internal/ctxsleep"
	"github.com/selfcode/selfcode/pipeline/chat"
)

// Defaults for zero Options fields.
const (
	DefaultHTTPTimeout = 3 * time.Minute
	DefaultMaxRetries  = 4
	DefaultBackoffBase = time.Second
	DefaultBackoffMax  = 30 * time.Second
)

// maxGarbageRetries is how many times a call is repeated after a 2xx answer
// that is not a usable completion (body not JSON, no choices): once. A
// second garbage answer in the same call fails it with ErrBadReply, because
// a server that keeps answering garbage is broken rather than busy.
const maxGarbageRetries = 1

// Options configure a Client.
type Options struct {
	// BaseURL is the API base, e.g. https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// Models names the model for each role; a call for a role without an
	// entry fails with ErrUnknownRole.
	Models map[chat.Role]string
	// HTTPTimeout bounds one HTTP exchange (DefaultHTTPTimeout when 0).
	HTTPTimeout time.Duration
	// MaxRetries is how many times a failed call is retried after the first
	// attempt (DefaultMaxRetries when 0; negative: never).
	MaxRetries int
	// Backoff between retries (DefaultBackoffBase/Max for zero fields).
	Backoff Backoff
	// Sleep waits between retries; it must return early with ctx's error
	// when ctx ends. Nil uses a timer. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger gets retries and the JSON-schema fallback; nil discards.
	Logger *slog.Logger
	// Budget, when set, is checked before and charged after each call.
	Budget *Budget
	// Observer, when set, is told the usage of every successful call.
	Observer func(role chat.Role, u chat.Usage)
}

// Client is a chat.Model over an OpenAI-compatible chat-completions API.
// It is safe for concurrent use.
type Client struct {
	api        *openai.Client
	models     map[chat.Role]string
	maxRetries int
	backoff    Backoff
	sleep      func(ctx context.Context, d time.Duration) error
	log        *slog.Logger
	budget     *Budget
	observer   func(role chat.Role, u chat.Usage)

	// noJSONSchema is set once the server has rejected response_format
	// json_schema; later schema calls go straight to the fallback.
	noJSONSchema atomic.Bool
	calls        atomic.Uint64
}

var _ chat.Model = (*Client)(nil)

// New checks opts and builds a Client.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(opts.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("llm: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: base URL %q: want an absolute http(s) URL", opts.BaseURL)
	}
	if len(opts.Models) == 0 {
		return nil, errors.New("llm: no models configured")
	}
	models := make(map[chat.Role]string, len(opts.Models))
	for role, m := range opts.Models {
		if m == "" {
			return nil, fmt.Errorf("llm: empty model name for role %q", role)
		}
		models[role] = m
	}
	if opts.HTTPTimeout < 0 || opts.Backoff.Base < 0 || opts.Backoff.Max < 0 {
		return nil, errors.New("llm: negative timeout or backoff")
	}

	timeout := opts.HTTPTimeout
	if timeout == 0 {
		timeout = DefaultHTTPTimeout
	}
	retries := opts.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	backoff := opts.Backoff
	if backoff.Base == 0 {
		backoff.Base = DefaultBackoffBase
	}
	if backoff.Max == 0 {
		backoff.Max = max(DefaultBackoffMax, backoff.Base)
	}
	backoff.Max = max(backoff.Max, backoff.Base)
	sleep := opts.Sleep
	if sleep == nil {
		sleep = ctxsleep.Sleep
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	cfg := openai.DefaultConfig(opts.APIKey)
	cfg.BaseURL = opts.BaseURL
	cfg.HTTPClient = headerDoer{client: &http.Client{Timeout: timeout}}
	return &Client{
		api:        openai.NewClientWithConfig(cfg),
		models:     models,
		maxRetries: retries,
		backoff:    backoff,
		sleep:      sleep,
		log:        logger,
		budget:     opts.Budget,
		observer:   opts.Observer,
	}, nil
}

// Chat sends one chat completion for req.Role's model, retrying transient
// failures, and returns the first choice. Errors are wrapped as
// "chat <role>: …" and carry an Err* kind, chat.ErrBudgetExhausted, or the
// context's error.
func (c *Client) Chat(ctx context.Context, req chat.Request) (chat.Response, error) {
	resp, err := c.chat(ctx, req)
	if err != nil {
		return chat.Response{}, fmt.Errorf("chat %s: %w", req.Role, err)
	}
	return resp, nil
}

func (c *Client) chat(ctx context.Context, req chat.Request) (chat.Response, error) {
	model, ok := c.models[req.Role]
	if !ok {
		return chat.Response{}, ErrUnknownRole
	}
	if c.budget != nil {
		if err := c.budget.Check(); err != nil {
			return chat.Response{}, err
		}
	}
	oreq, err := toOpenAI(model, req)
	if err != nil {
		return chat.Response{}, err
	}
	fallback := req.Schema != nil && c.noJSONSchema.Load()
	if fallback {
		oreq = withoutSchema(oreq, req.Schema)
	}
	log := c.log.With("role", string(req.Role), "model", model)

	var retries, garbage int
	for {
		if err := ctx.Err(); err != nil {
			return chat.Response{}, err
		}
		info := &attemptInfo{}
		resp, err := c.api.CreateChatCompletion(context.WithValue(ctx, attemptKey{}, info), oreq)
		if err == nil && len(resp.Choices) == 0 {
			err = fmt.Errorf("%w: the answer has no choices", ErrBadReply)
		}
		if err == nil {
			return c.finish(req.Role, model, resp), nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return chat.Response{}, fmt.Errorf("%w (last error: %v)", ctxErr, err)
		}

		class, kerr := classify(err, info)
		if class == noRetry && req.Schema != nil && !fallback && rejectsSchema(kerr) {
			fallback = true
			c.noJSONSchema.Store(true)
			log.Warn("llm: server rejects response_format json_schema; asking for JSON in the prompt instead", "err", kerr)
			oreq = withoutSchema(oreq, req.Schema)
			continue
		}
		switch {
		case class == noRetry:
			return chat.Response{}, kerr
		case class == retryGarbage && garbage >= maxGarbageRetries:
			return chat.Response{}, fmt.Errorf("giving up after %d unusable answers: %w", garbage+1, kerr)
		case retries >= c.maxRetries:
			return chat.Response{}, fmt.Errorf("giving up after %d attempts: %w", retries+1, kerr)
		}
		if class == retryGarbage {
			garbage++
		}
		wait := c.backoff.delay(retries)
		if info.retryAfter > 0 {
			wait = info.retryAfter
		}
		retries++
		log.Warn("llm: retrying", "attempt", retries+1, "wait", wait, "request_id", info.requestID, "err", kerr)
		if err := c.sleep(ctx, wait); err != nil {
			return chat.Response{}, fmt.Errorf("waiting to retry after %v: %w", kerr, err)
		}
	}
}

// finish maps a reply to a call for model and charges its usage.
func (c *Client) finish(role chat.Role, model string, resp openai.ChatCompletionResponse) chat.Response {
	out := fromOpenAI(model, resp, c.calls.Add(1))
	if c.budget != nil {
		c.budget.Add(role, out.Usage.Total)
	}
	if c.observer != nil {
		c.observer(role, out.Usage)
	}
	return out
}
