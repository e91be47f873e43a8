package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v60/github"

	"github.com/selfcode/selfcode/internal/ctxsleep"
	"github.com/selfcode/selfcode/internal/keyedlock"
)

// DefaultBaseURL is GitHub.com's REST API.
const DefaultBaseURL = "https://api.github.com/"

// Options configures the client factory.
type Options struct {
	// AppID and PrivateKeyPEM identify the GitHub App. Both may be empty for the
	// manifest conversion (selfcode setup); App and Installation then fail.
	AppID         int64
	PrivateKeyPEM []byte
	// BaseURL is the REST base (SELFCODE_GITHUB_API_URL), e.g.
	// https://api.github.com/, https://HOST/api/v3/ or http://127.0.0.1:PORT/.
	// Default DefaultBaseURL.
	BaseURL string
	// HTTPTimeout bounds each attempt (connect, headers and body); default 30 s.
	HTTPTimeout time.Duration
	// CallTimeout bounds a whole call including retries and rate-limit waits (it is
	// the http.Client timeout); default 20 minutes. The caller's context also applies.
	CallTimeout time.Duration
	// Logger for retries and waits (never given tokens or bodies); default discards.
	Logger *slog.Logger
	// UserAgent sent with every request; default "selfcode".
	UserAgent string

	// MaxAttempts is the number of attempts for a transient failure; default 4.
	MaxAttempts int
	// BaseBackoff is the first transient retry's delay (doubling, jittered, ≤10 s);
	// default 500 ms.
	BaseBackoff time.Duration
	// MaxRateLimitRetries is how many rate-limit waits one call may do; default 5.
	MaxRateLimitRetries int
	// MaxRateLimitWait is the longest single rate-limit wait; a longer one fails
	// the call at once with ErrRateLimited and RetryAt. Default 15 minutes.
	MaxRateLimitWait time.Duration

	// Now and Sleep replace the clock and the context-aware sleep (tests).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Transport is the underlying round tripper; default a tuned http.Transport.
	Transport http.RoundTripper
}

// Factory creates authenticated clients. It is safe for concurrent use.
type Factory struct {
	opts    Options
	baseURL *url.URL
	shared  *transport
	apps    *ghinstallation.AppsTransport // nil without app credentials
	app     *gh.Client                    // JWT-authenticated
	anon    *gh.Client                    // unauthenticated

	mu       sync.Mutex
	installs map[int64]*Client
	identity *AppIdentity
}

// New builds a factory. It makes no network calls.
func New(opts Options) (*Factory, error) {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	if !strings.HasSuffix(opts.BaseURL, "/") {
		opts.BaseURL += "/"
	}
	base, err := url.Parse(opts.BaseURL)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("parse GitHub API URL %q: invalid absolute URL", opts.BaseURL)
	}
	if opts.HTTPTimeout <= 0 {
		opts.HTTPTimeout = 30 * time.Second
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 20 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "selfcode"
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 4
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = 500 * time.Millisecond
	}
	if opts.MaxRateLimitRetries <= 0 {
		opts.MaxRateLimitRetries = 5
	}
	if opts.MaxRateLimitWait <= 0 {
		opts.MaxRateLimitWait = 15 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = ctxsleep.Sleep
	}
	if opts.Transport == nil {
		opts.Transport = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: opts.HTTPTimeout,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   10,
			ForceAttemptHTTP2:     true,
		}
	}
	f := &Factory{
		opts:    opts,
		baseURL: base,
		shared: &transport{
			base:           opts.Transport,
			attemptTimeout: opts.HTTPTimeout,
			maxAttempts:    opts.MaxAttempts,
			maxRLRetries:   opts.MaxRateLimitRetries,
			maxRLWait:      opts.MaxRateLimitWait,
			baseBackoff:    opts.BaseBackoff,
			now:            opts.Now,
			sleep:          opts.Sleep,
			logger:         opts.Logger,
			locks:          &keyedlock.Locks{},
		},
		installs: map[int64]*Client{},
	}
	f.anon = f.newGitHub(f.shared)
	if opts.AppID != 0 && len(opts.PrivateKeyPEM) > 0 {
		apps, err := ghinstallation.NewAppsTransport(f.shared, opts.AppID, opts.PrivateKeyPEM)
		if err != nil {
			// ghinstallation's message does not include the key.
			return nil, fmt.Errorf("load GitHub App private key: %w", err)
		}
		apps.BaseURL = strings.TrimRight(opts.BaseURL, "/")
		apps.Client = &http.Client{Transport: f.shared, Timeout: opts.CallTimeout}
		f.apps = apps
		f.app = f.newGitHub(apps)
	}
	return f, nil
}

func (f *Factory) newGitHub(rt http.RoundTripper) *gh.Client {
	c := gh.NewClient(&http.Client{Transport: rt, Timeout: f.opts.CallTimeout})
	u := *f.baseURL
	c.BaseURL = &u
	up := *f.baseURL
	c.UploadURL = &up
	c.UserAgent = f.opts.UserAgent
	return c
}

var errNoCredentials = errors.New("github: app id and private key are not configured")

// ErrNotInstalled: the app has no installation yet, so nothing it may read
// with an installation token (its bot user) can be read.
var ErrNotInstalled = errors.New("github: the app is not installed anywhere yet")

// Installation returns the (cached) client of an installation. Tokens are minted on
// first use and refreshed before they expire.
func (f *Factory) Installation(ctx context.Context, id int64) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if f.apps == nil {
		return nil, errNoCredentials
	}
	if id <= 0 {
		return nil, fmt.Errorf("github: invalid installation id %d", id)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.installs[id]; ok {
		return c, nil
	}
	it := &installationTransport{factory: f, id: id}
	it.cur = it.fresh()
	c := &Client{id: id, gh: f.newGitHub(it), tokens: it}
	f.installs[id] = c
	return c, nil
}

// installationTransport authenticates as one installation. If GitHub answers 401
// although ghinstallation still considers its token valid (revoked, or the clocks
// disagree), it starts over with a new token and repeats the request once.
// RepoInstallation returns the client of the installation that can reach
// owner/repo (GET /repos/{owner}/{repo}/installation with the App's JWT):
// for reading a repository known only by its name, such as a local
// checkout's GitHub remote.
func (f *Factory) RepoInstallation(ctx context.Context, owner, repo string) (*Client, error) {
	if f.app == nil {
		return nil, errNoCredentials
	}
	inst, _, err := f.app.Apps.FindRepositoryInstallation(ctx, owner, repo)
	if err != nil {
		return nil, classify(fmt.Sprintf("find the installation of %s/%s", owner, repo), err)
	}
	return f.Installation(ctx, inst.GetID())
}

type installationTransport struct {
	factory *Factory
	id      int64
	mu      sync.Mutex
	cur     *ghinstallation.Transport
}

func (it *installationTransport) fresh() *ghinstallation.Transport {
	// Each installation transport gets its own copy of the apps transport, because
	// ghinstallation writes BaseURL/Client into it on every token refresh.
	apps := *it.factory.apps
	t := ghinstallation.NewFromAppsTransport(&apps, it.id)
	t.BaseURL = strings.TrimRight(it.factory.opts.BaseURL, "/")
	t.Client = &http.Client{Transport: it.factory.shared, Timeout: it.factory.opts.CallTimeout}
	return t
}

func (it *installationTransport) current() *ghinstallation.Transport {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.cur
}

// renew replaces the transport unless another request already did.
func (it *installationTransport) renew(old *ghinstallation.Transport) *ghinstallation.Transport {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.cur == old {
		it.cur = it.fresh()
	}
	return it.cur
}

func (it *installationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r, err := replayable(req)
	if err != nil {
		return nil, err
	}
	tr := it.current()
	resp, err := tr.RoundTrip(withBody(r))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	drain(resp)
	it.factory.opts.Logger.Info("github installation token rejected, minting a new one", "installation_id", it.id)
	return it.renew(tr).RoundTrip(withBody(r))
}

func (it *installationTransport) Token(ctx context.Context) (string, error) {
	return it.current().Token(ctx)
}

// withBody clones a replayable request with a fresh body.
func withBody(r *http.Request) *http.Request {
	c := r.Clone(r.Context())
	if r.GetBody != nil {
		if b, err := r.GetBody(); err == nil {
			c.Body = b
		}
	}
	return c
}

// AppIdentity is who the app is on GitHub, and how its commits are attributed.
type AppIdentity struct {
	ID        int64
	Slug      string
	Name      string
	HTMLURL   string
	BotLogin  string // "<slug>[bot]"
	BotUserID int64
	BotEmail  string // "<bot id>+<slug>[bot]@users.noreply.github.com"
}

// App fetches the app (GET /app, JWT) and its bot user (GET
// /users/<slug>[bot] with an installation's token). The result is cached
// after the first success.
func (f *Factory) App(ctx context.Context) (AppIdentity, error) {
	f.mu.Lock()
	cached := f.identity
	f.mu.Unlock()
	if cached != nil {
		return *cached, nil
	}
	if f.app == nil {
		return AppIdentity{}, errNoCredentials
	}
	app, _, err := f.app.Apps.Get(ctx, "")
	if err != nil {
		return AppIdentity{}, classify("get app", err)
	}
	id := AppIdentity{ID: app.GetID(), Slug: app.GetSlug(), Name: app.GetName(), HTMLURL: app.GetHTMLURL()}
	id.BotLogin = id.Slug + "[bot]"
	// The bot user is read with an installation's token, never anonymously:
	// GitHub Enterprise Server in private mode refuses anonymous reads.
	insts, _, err := f.app.Apps.ListInstallations(ctx, &gh.ListOptions{PerPage: 1})
	if err != nil {
		return AppIdentity{}, classify("list the app's installations", err)
	}
	if len(insts) == 0 {
		return AppIdentity{}, ErrNotInstalled
	}
	c, err := f.Installation(ctx, insts[0].GetID())
	if err != nil {
		return AppIdentity{}, err
	}
	bot, _, err := c.gh.Users.Get(ctx, id.BotLogin)
	if err != nil {
		return AppIdentity{}, classify("get bot user "+id.BotLogin, err)
	}
	id.BotUserID = bot.GetID()
	id.BotEmail = fmt.Sprintf("%d+%s@users.noreply.github.com", id.BotUserID, id.BotLogin)
	f.mu.Lock()
	f.identity = &id
	f.mu.Unlock()
	return id, nil
}

// ManifestCredentials is what GitHub returns when a manifest code is converted.
// It holds secrets: its String and LogValue redact them.
type ManifestCredentials struct {
	ID            int64
	Slug          string
	Name          string
	HTMLURL       string
	Owner         string
	ClientID      string
	ClientSecret  string
	WebhookSecret string
	PEM           string
}

// String implements fmt.Stringer without the secrets.
func (m ManifestCredentials) String() string {
	return fmt.Sprintf("GitHub App %d (%s) owned by %s", m.ID, m.Slug, m.Owner)
}

// LogValue implements slog.LogValuer without the secrets.
func (m ManifestCredentials) LogValue() slog.Value {
	return slog.GroupValue(slog.Int64("app_id", m.ID), slog.String("slug", m.Slug), slog.String("owner", m.Owner))
}

// CreateFromManifest exchanges a manifest-flow code for the new app's credentials
// (POST /app-manifests/{code}/conversions, unauthenticated). Codes work once, so a
// failed exchange is not retried after GitHub may have processed it.
func (f *Factory) CreateFromManifest(ctx context.Context, code string) (ManifestCredentials, error) {
	if code == "" || strings.ContainsAny(code, "/?#") {
		return ManifestCredentials{}, fmt.Errorf("github: invalid manifest code")
	}
	cfg, _, err := f.anon.Apps.CompleteAppManifest(ctx, url.PathEscape(code))
	if err != nil {
		return ManifestCredentials{}, classify("convert app manifest", err)
	}
	return ManifestCredentials{
		ID: cfg.GetID(), Slug: cfg.GetSlug(), Name: cfg.GetName(), HTMLURL: cfg.GetHTMLURL(),
		Owner: cfg.GetOwner().GetLogin(), ClientID: cfg.GetClientID(), ClientSecret: cfg.GetClientSecret(),
		WebhookSecret: cfg.GetWebhookSecret(), PEM: cfg.GetPEM(),
	}, nil
}
