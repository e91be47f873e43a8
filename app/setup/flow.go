package setup

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/selfcode/selfcode/app/github"
)

// Exchanger turns the flow's temporary code into the new app's credentials
// (POST /app-manifests/{code}/conversions); *github.Factory is one.
type Exchanger interface {
	CreateFromManifest(ctx context.Context, code string) (github.ManifestCredentials, error)
}

// Options configures a Flow.
type Options struct {
	// AppYML is the manifest in app.yml form.
	AppYML []byte
	// WebhookURL is the public /webhook URL GitHub will deliver to.
	WebhookURL string
	// GitHubHost is github.com (default), a GHES host, or a full base URL
	// such as http://127.0.0.1:PORT for a fake GitHub.
	GitHubHost string
	// Org registers the app for this organisation instead of the user.
	Org string
	// Name overrides app.yml's name.
	Name string
	// Listener is where the local page is served; its address makes the
	// redirect URL (http://ADDR/callback). It should be on 127.0.0.1.
	Listener net.Listener
	// Exchanger converts the code; it must talk to the same GitHub.
	Exchanger Exchanger
	// Write says where the credentials go.
	Write WriteOptions
	// Logger for progress (never given secrets); default discards.
	Logger *slog.Logger
}

// Result is a registered app, without its secrets.
type Result struct {
	AppID   int64
	Slug    string
	Name    string
	Owner   string
	HTMLURL string
	File    string
}

// InstallURL is where the app is installed on repositories.
func (r Result) InstallURL() string { return r.HTMLURL + "/installations/new" }

// Flow is one run of the manifest flow: a local page and its callback.
type Flow struct {
	o        Options
	log      *slog.Logger
	manifest *Manifest
	action   string
	state    string
	base     string // http://127.0.0.1:PORT
	hosts    map[string]bool
	pages    *template.Template

	mu     sync.Mutex
	result *Result
	done   chan struct{}
}

var orgName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)

//go:embed page.html
var pageFS embed.FS

// New checks the options, builds the manifest and checks that the
// credentials file can be written before anything is registered.
func New(o Options) (*Flow, error) {
	if o.Listener == nil || o.Exchanger == nil {
		return nil, errors.New("setup needs a listener and an exchanger")
	}
	if o.Org != "" && !orgName.MatchString(o.Org) {
		return nil, fmt.Errorf("--org %q is not a GitHub organisation name", o.Org)
	}
	web, err := GitHubWeb(o.GitHubHost)
	if err != nil {
		return nil, err
	}
	if err := CheckWritable(o.Write); err != nil {
		return nil, err
	}
	addr, ok := o.Listener.Addr().(*net.TCPAddr)
	if !ok {
		return nil, errors.New("setup listener is not TCP")
	}
	base := "http://" + addr.String()
	m, err := BuildManifest(o.AppYML, ManifestOptions{WebhookURL: o.WebhookURL, RedirectURL: base + "/callback", Name: o.Name})
	if err != nil {
		return nil, err
	}
	var sb [24]byte
	if _, err := rand.Read(sb[:]); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	state := hex.EncodeToString(sb[:])
	pages, err := template.ParseFS(pageFS, "page.html")
	if err != nil {
		return nil, fmt.Errorf("setup page: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	port := fmt.Sprint(addr.Port)
	return &Flow{o: o, log: log, manifest: m, action: FormAction(web, o.Org, state), state: state, base: base,
		hosts: map[string]bool{addr.String(): true, "localhost:" + port: true, "127.0.0.1:" + port: true},
		pages: pages, done: make(chan struct{})}, nil
}

// URL is the local page to open in a browser.
func (f *Flow) URL() string { return f.base + "/" }

// Manifest is what the page posts.
func (f *Flow) Manifest() *Manifest { return f.manifest }

// Run serves the page until the credentials are written (then it returns
// the result) or ctx ends.
func (f *Flow) Run(ctx context.Context) (Result, error) {
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(f.o.Listener) }()
	var err error
	select {
	case <-f.done:
	case <-ctx.Done():
		err = fmt.Errorf("setup did not finish: %w", context.Cause(ctx))
	case err = <-errc:
		err = fmt.Errorf("setup page: %w", err)
	}
	// Let the success page finish; browsers keep speculative connections
	// open that Shutdown would otherwise wait for.
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if srv.Shutdown(sctx) != nil {
		_ = srv.Close()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.result != nil {
		return *f.result, nil
	}
	return Result{}, err
}

// page is the data of page.html.
type page struct {
	Kind     string // form, done, error
	Status   int
	Message  string
	Action   string
	Manifest string
	M        *Manifest
	Org      string
	Result   *Result
	Start    string
}

func (f *Flow) render(w http.ResponseWriter, p page) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// The form goes to GitHub, which (after the user confirms) redirects
	// back here; browsers apply form-action to that redirect chain too.
	formTarget := "'self'"
	if u, err := url.Parse(f.action); err == nil {
		formTarget += " " + u.Scheme + "://" + u.Host
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action "+formTarget+"; frame-ancestors 'none'; base-uri 'none'")
	if p.Status == 0 {
		p.Status = http.StatusOK
	}
	p.Start = f.URL()
	w.WriteHeader(p.Status)
	if err := f.pages.ExecuteTemplate(w, "page.html", p); err != nil {
		f.log.Error("render setup page", "err", err)
	}
}

// ServeHTTP serves GET / (the form) and GET /callback (GitHub's redirect).
func (f *Flow) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !f.hosts[r.Host] {
		// A page of another site that resolves its name to 127.0.0.1
		// (DNS rebinding) must not read the state or drive the flow.
		http.Error(w, "unexpected Host header", http.StatusMisdirectedRequest)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/":
		f.form(w)
	case "/callback":
		f.callback(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *Flow) form(w http.ResponseWriter) {
	f.mu.Lock()
	res := f.result
	f.mu.Unlock()
	if res != nil {
		f.render(w, page{Kind: "done", Result: res})
		return
	}
	f.render(w, page{Kind: "form", Action: f.action, Manifest: string(f.manifest.JSON()), M: f.manifest, Org: f.o.Org})
}

func (f *Flow) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.state)) != 1 {
		f.log.Warn("setup callback with a wrong state; ignored")
		f.render(w, page{Kind: "error", Status: http.StatusBadRequest,
			Message: "This redirect does not belong to this setup run (its state does not match). Start again from the setup page."})
		return
	}
	code := q.Get("code")
	if code == "" {
		f.render(w, page{Kind: "error", Status: http.StatusBadRequest, Message: "GitHub sent no code. Start again from the setup page."})
		return
	}
	// One exchange at a time; a code works once.
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.result != nil {
		f.render(w, page{Kind: "done", Status: http.StatusOK, Result: f.result})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
	defer cancel()
	creds, err := f.o.Exchanger.CreateFromManifest(ctx, code)
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), code, "CODE") // the code is single-use but still a credential
		f.log.Error("exchange the manifest code", "err", msg)
		f.render(w, page{Kind: "error", Status: http.StatusBadGateway,
			Message: "GitHub did not hand over the app's credentials: " + msg + ". Codes expire after an hour and work once; start again from the setup page."})
		return
	}
	if err := WriteCredentials(creds, f.o.Write); err != nil {
		f.log.Error("write credentials", "err", err, "app_id", creds.ID)
		f.render(w, page{Kind: "error", Status: http.StatusInternalServerError,
			Message: fmt.Sprintf("The app %s (id %d) was registered, but its credentials could not be saved: %v. Generate a new private key on the app's settings page (%s) and configure it by hand, or delete the app and run setup again.", creds.Slug, creds.ID, err, creds.HTMLURL)})
		return
	}
	f.result = &Result{AppID: creds.ID, Slug: creds.Slug, Name: creds.Name, Owner: creds.Owner, HTMLURL: creds.HTMLURL, File: f.o.Write.File}
	f.log.Info("GitHub App registered", "app", creds, "file", f.o.Write.File)
	f.render(w, page{Kind: "done", Result: f.result})
	close(f.done)
}
