package fakegithub

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrNotFound is returned by the accessors and helpers when a repository, issue,
// branch or other resource does not exist in the fake.
var ErrNotFound = errors.New("fakegithub: not found")

// Options configures a fake GitHub. The zero value is usable.
type Options struct {
	// AppID is the GitHub App id; default 1.
	AppID int64
	// AppSlug is the app's slug; default "selfcode-test". The bot user is "<slug>[bot]".
	AppSlug string
	// AppName is the app's display name; default "selfcode (test)".
	AppName string
	// PrivateKeyPEM is the app's RSA private key (PKCS#1 or PKCS#8 PEM). Empty: a
	// 2048-bit key is generated.
	PrivateKeyPEM []byte
	// TokenTTL is the lifetime of minted installation tokens; default one hour.
	TokenTTL time.Duration
	// Now is the fake's clock (token expiry, timestamps, JWT checks); default time.Now.
	Now func() time.Time
	// Dir holds the bare repositories. Empty: a temporary directory removed by Close.
	Dir string
	// Logger receives git http-backend diagnostics; default discards.
	Logger *slog.Logger
	// PrivateMode refuses anonymous reads (GET /users/{login}) with 401, as
	// GitHub Enterprise Server in private mode does; an installation token
	// is then needed.
	PrivateMode bool
	// Permissions and Events are the app's registered permissions (name →
	// read/write) and webhook events, in GET /app and on installations.
	// Default: what app.yml asks for.
	Permissions map[string]string
	Events      []string
	// WebhookURL is the app's webhook URL (GET /app/hook/config); default
	// empty, as a fresh app's.
	WebhookURL string
}

// AppYMLPermissions and AppYMLEvents are app.yml's default_permissions and
// default_events: the fake's app is registered from it unless Options say
// otherwise.
func AppYMLPermissions() map[string]string {
	return map[string]string{"actions": "read", "checks": "write", "contents": "write", "issues": "write", "metadata": "read", "pull_requests": "write"}
}

// AppYMLEvents: see AppYMLPermissions.
func AppYMLEvents() []string {
	return []string{"check_run", "issue_comment", "issues", "pull_request", "pull_request_review", "pull_request_review_comment"}
}

// Server is a running fake GitHub listening on 127.0.0.1.
type Server struct {
	opts       Options
	key        *rsa.PrivateKey
	keyPEM     []byte
	root       string
	ownsRoot   bool
	gitBackend string
	logger     *slog.Logger
	listener   net.Listener
	http       *http.Server
	baseURL    string
	routes     []route

	mu            sync.Mutex
	nextID        int64
	users         map[string]*user
	installations map[int64]*installation
	tokens        map[string]*token
	issuedTokens  []string
	repos         map[string]*repo
	comments      map[int64]*Comment
	reviewComms   map[int64]*ReviewComment
	reactions     []*Reaction
	checkRuns     map[int64]*CheckRun
	jobLogs       map[int64]string // GitHub Actions job logs, by job id
	// logURL and logHop move a job's log elsewhere (logURL: the
	// API's answer; logHop: where the fake's own download redirects on).
	logURL, logHop map[int64]string
	manifestCodes  map[string]ManifestApp
	faults         []*Fault
	requests       []Request
	inFlight       map[string]int
	maxInFlight    map[string]int
	botLogin       string
}

// New starts a fake GitHub on a random loopback port.
func New(opts Options) (*Server, error) {
	if opts.AppID == 0 {
		opts.AppID = 1
	}
	if opts.AppSlug == "" {
		opts.AppSlug = "selfcode-test"
	}
	if opts.AppName == "" {
		opts.AppName = "selfcode (test)"
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.Permissions == nil {
		opts.Permissions = AppYMLPermissions()
	}
	if opts.Events == nil {
		opts.Events = AppYMLEvents()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{
		opts:          opts,
		logger:        opts.Logger,
		nextID:        1000,
		users:         map[string]*user{},
		installations: map[int64]*installation{},
		tokens:        map[string]*token{},
		repos:         map[string]*repo{},
		comments:      map[int64]*Comment{},
		reviewComms:   map[int64]*ReviewComment{},
		checkRuns:     map[int64]*CheckRun{},
		jobLogs:       map[int64]string{},
		logURL:        map[int64]string{},
		logHop:        map[int64]string{},
		manifestCodes: map[string]ManifestApp{},
		inFlight:      map[string]int{},
		maxInFlight:   map[string]int{},
	}
	if s.logger == nil {
		s.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := s.initKey(opts.PrivateKeyPEM); err != nil {
		return nil, err
	}
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("find git exec path: %w", err)
	}
	s.gitBackend = filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	if _, err := os.Stat(s.gitBackend); err != nil {
		return nil, fmt.Errorf("find git-http-backend: %w", err)
	}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "fakegithub-*")
		if err != nil {
			return nil, fmt.Errorf("create fake github dir: %w", err)
		}
		s.root, s.ownsRoot = dir, true
	} else {
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("create fake github dir: %w", err)
		}
		s.root = opts.Dir
	}
	if err := os.MkdirAll(filepath.Join(s.root, "repos"), 0o755); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("create repos dir: %w", err)
	}
	s.botLogin = opts.AppSlug + "[bot]"
	s.ensureUserLocked(s.botLogin)
	s.routes = s.buildRoutes()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.cleanup()
		return nil, fmt.Errorf("listen: %w", err)
	}
	s.listener = ln
	s.baseURL = "http://" + ln.Addr().String() + "/"
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	return s, nil
}

func (s *Server) initKey(pemBytes []byte) error {
	if len(pemBytes) == 0 {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return fmt.Errorf("generate app key: %w", err)
		}
		s.key = k
		s.keyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
		return nil
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return errors.New("parse app key: no PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		s.key = k
	} else {
		parsed, err8 := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err8 != nil {
			return fmt.Errorf("parse app key: %w", err)
		}
		k, ok := parsed.(*rsa.PrivateKey)
		if !ok {
			return errors.New("parse app key: not an RSA key")
		}
		s.key = k
	}
	s.keyPEM = append([]byte(nil), pemBytes...)
	return nil
}

// URL is the REST API base URL, ending with "/" (use it as SELFCODE_GITHUB_API_URL).
func (s *Server) URL() string { return s.baseURL }

// GitURL is the smart-HTTP clone URL of a repository (without credentials).
func (s *Server) GitURL(owner, repo string) string {
	return s.baseURL + owner + "/" + repo + ".git"
}

// HTMLURL is the fake's "web" URL of a path such as "owner/repo/pull/1".
func (s *Server) HTMLURL(path string) string { return s.baseURL + strings.TrimPrefix(path, "/") }

// PrivateKeyPEM is the app's private key in PEM form.
func (s *Server) PrivateKeyPEM() []byte { return append([]byte(nil), s.keyPEM...) }

// AppID is the app's id.
func (s *Server) AppID() int64 { return s.opts.AppID }

// AppSlug is the app's slug.
func (s *Server) AppSlug() string { return s.opts.AppSlug }

// BotLogin is the app's bot user login, "<slug>[bot]".
func (s *Server) BotLogin() string { return s.botLogin }

// BotUserID is the id of the app's bot user (as GET /users/<slug>[bot] reports).
func (s *Server) BotUserID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.users[strings.ToLower(s.botLogin)].id
}

// BotEmail is the bot's noreply commit e-mail, "<id>+<slug>[bot]@users.noreply.github.com".
func (s *Server) BotEmail() string {
	return fmt.Sprintf("%d+%s@users.noreply.github.com", s.BotUserID(), s.botLogin)
}

// Close stops the server and removes the temporary directory it created.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if err != nil {
		err = s.http.Close()
	}
	s.cleanup()
	if err != nil {
		return fmt.Errorf("stop fake github: %w", err)
	}
	return nil
}

func (s *Server) cleanup() {
	if s.ownsRoot {
		_ = os.RemoveAll(s.root)
	}
}

func (s *Server) now() time.Time { return s.opts.Now().UTC().Truncate(time.Second) }

// Request is one request the fake received, as recorded for assertions.
type Request struct {
	Time   time.Time
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	Status int
}

// maxRecordedBody caps how much of a request body is recorded (git packs can be large).
const maxRecordedBody = 1 << 20

// Requests returns every request received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsMatching returns the recorded requests with this method ("" = any) whose
// path starts with pathPrefix.
func (s *Server) RequestsMatching(method, pathPrefix string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if (method == "" || strings.EqualFold(method, r.Method)) && strings.HasPrefix(r.Path, pathPrefix) {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// MaxConcurrentWrites is the largest number of POST/PATCH/PUT/DELETE requests to
// /repos/{owner}/{repo}/... that were being handled at the same moment.
func (s *Server) MaxConcurrentWrites(owner, repo string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight[repoKey(owner, repo)]
}

// Fault makes matching requests fail (or slow down) before they reach any handler,
// like a misbehaving front end.
type Fault struct {
	// Method to match; empty matches any.
	Method string
	// PathPattern is a path.Match pattern for the URL path, e.g.
	// "/repos/*/*/issues/*/comments"; empty matches every path.
	PathPattern string
	// Status to answer with; 0 lets the request through (after Delay).
	Status int
	// Times is how many requests the fault applies to; 0 or less means until ClearFaults.
	Times int
	// Headers are added to the fault response (e.g. "Retry-After": "1").
	Headers map[string]string
	// Body of the fault response; empty gives {"message": <status text>}.
	Body string
	// Delay before answering (or before passing the request on when Status is 0).
	Delay time.Duration
	// Reached, when set, is called with each request the fault applies to,
	// before the delay: a test waits on it to act while the request hangs.
	Reached func(method, path string)
}

// InjectFault adds a fault. Faults are tried in the order they were added.
func (s *Server) InjectFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fc := f
	s.faults = append(s.faults, &fc)
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

func (s *Server) matchFault(method, urlPath string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Method != "" && !strings.EqualFold(f.Method, method) {
			continue
		}
		if f.PathPattern != "" {
			if ok, err := pathMatch(f.PathPattern, urlPath); err != nil || !ok {
				continue
			}
		}
		hit := *f
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		return &hit
	}
	return nil
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// ServeHTTP records the request, applies faults, then dispatches to git or REST.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	rec := &recorder{ResponseWriter: w}
	defer func() {
		recorded := body
		if len(recorded) > maxRecordedBody {
			recorded = recorded[:maxRecordedBody]
		}
		s.mu.Lock()
		s.requests = append(s.requests, Request{
			Time:   s.now(),
			Method: r.Method,
			Path:   r.URL.Path,
			Query:  r.URL.RawQuery,
			Header: r.Header.Clone(),
			Body:   append([]byte(nil), recorded...),
			Status: rec.status,
		})
		s.mu.Unlock()
	}()

	if key, ok := writeRepoKey(r); ok {
		s.mu.Lock()
		s.inFlight[key]++
		if s.inFlight[key] > s.maxInFlight[key] {
			s.maxInFlight[key] = s.inFlight[key]
		}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.inFlight[key]--
			s.mu.Unlock()
		}()
	}

	if f := s.matchFault(r.Method, r.URL.Path); f != nil {
		if f.Reached != nil {
			f.Reached(r.Method, r.URL.Path)
		}
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if f.Status != 0 {
			for k, v := range f.Headers {
				rec.Header().Set(k, v)
			}
			if f.Body == "" {
				writeError(rec, f.Status, http.StatusText(f.Status))
				return
			}
			if rec.Header().Get("Content-Type") == "" {
				rec.Header().Set("Content-Type", "application/json; charset=utf-8")
			}
			rec.WriteHeader(f.Status)
			_, _ = io.WriteString(rec, f.Body)
			return
		}
	}

	if owner, name, rest, ok := splitGitPath(r.URL.EscapedPath()); ok {
		s.serveGit(rec, r, owner, name, rest)
		return
	}
	s.serveREST(rec, r)
}

// writeRepoKey reports the repository a write request addresses.
func writeRepoKey(r *http.Request) (string, bool) {
	switch r.Method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
	default:
		return "", false
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(segs) >= 3 && segs[0] == "repos" {
		return repoKey(segs[1], segs[2]), true
	}
	return "", false
}

func repoKey(owner, repo string) string {
	return strings.ToLower(owner) + "/" + strings.ToLower(repo)
}
