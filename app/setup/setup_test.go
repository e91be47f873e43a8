package setup

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/internal/fakegithub"
)

func appYML(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "app.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuildManifest(t *testing.T) {
	const hook, redirect = "https://bot.example.com/webhook", "http://127.0.0.1:3000/callback"
	tests := []struct {
		name    string
		yml     string
		opts    ManifestOptions
		wantErr string
		check   func(t *testing.T, m map[string]any)
	}{
		{name: "app.yml", yml: "", opts: ManifestOptions{WebhookURL: hook, RedirectURL: redirect}, check: func(t *testing.T, m map[string]any) {
			h := m["hook_attributes"].(map[string]any)
			if h["url"] != hook || h["active"] != true {
				t.Errorf("hook_attributes = %v", h)
			}
			if m["redirect_url"] != redirect || m["name"] != "selfcode" || m["public"] != false || m["url"] != "https://github.com/selfcode/selfcode" {
				t.Errorf("manifest = %v", m)
			}
			perms := m["default_permissions"].(map[string]any)
			want := map[string]any{"issues": "write", "pull_requests": "write", "contents": "write", "checks": "write", "actions": "read", "metadata": "read"}
			if len(perms) != len(want) {
				t.Errorf("permissions = %v", perms)
			}
			for k, v := range want {
				if perms[k] != v {
					t.Errorf("permission %s = %v, want %v", k, perms[k], v)
				}
			}
			events := m["default_events"].([]any)
			if len(events) != 6 || events[0] != "issue_comment" {
				t.Errorf("events = %v", events)
			}
		}},
		{name: "name override and inactive hook kept", yml: "url: https://x.example\nname: a\nhook_attributes: {active: false}\n",
			opts: ManifestOptions{WebhookURL: hook, RedirectURL: redirect, Name: "selfcode-acme"}, check: func(t *testing.T, m map[string]any) {
				if m["name"] != "selfcode-acme" || m["hook_attributes"].(map[string]any)["active"] != false {
					t.Errorf("manifest = %v", m)
				}
			}},
		{name: "no url", yml: "name: x\n", opts: ManifestOptions{WebhookURL: hook, RedirectURL: redirect}, wantErr: "url (the app's homepage) is required"},
		{name: "empty file", yml: "# nothing\n", opts: ManifestOptions{WebhookURL: hook, RedirectURL: redirect}, wantErr: "empty"},
		{name: "not yaml", yml: "url: [\n", opts: ManifestOptions{WebhookURL: hook, RedirectURL: redirect}, wantErr: "read app.yml"},
		{name: "bad permission", yml: "url: https://x.example\ndefault_permissions: {issues: admin}\n", opts: ManifestOptions{WebhookURL: hook, RedirectURL: redirect}, wantErr: "default_permissions.issues"},
		{name: "events not a list", yml: "url: https://x.example\ndefault_events: issues\n", opts: ManifestOptions{WebhookURL: hook, RedirectURL: redirect}, wantErr: "default_events must be a list"},
		{name: "hook not a mapping", yml: "url: https://x.example\nhook_attributes: yes\n", opts: ManifestOptions{WebhookURL: hook, RedirectURL: redirect}, wantErr: "hook_attributes must be a mapping"},
		{name: "no webhook url", yml: "url: https://x.example\n", opts: ManifestOptions{RedirectURL: redirect}, wantErr: "--webhook-url"},
		{name: "relative webhook url", yml: "url: https://x.example\n", opts: ManifestOptions{WebhookURL: "/webhook", RedirectURL: redirect}, wantErr: "--webhook-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yml := []byte(tt.yml)
			if tt.name == "app.yml" {
				yml = appYML(t)
			}
			m, err := BuildManifest(yml, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(m.JSON(), &got); err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
}

func TestGitHubAddresses(t *testing.T) {
	tests := []struct {
		host, org, wantAction, wantAPI, wantErr string
	}{
		{host: "", wantAction: "https://github.com/settings/apps/new?state=S", wantAPI: "https://api.github.com/"},
		{host: "github.com", org: "acme", wantAction: "https://github.com/organizations/acme/settings/apps/new?state=S", wantAPI: "https://api.github.com/"},
		{host: "ghe.example.com", wantAction: "https://ghe.example.com/settings/apps/new?state=S", wantAPI: "https://ghe.example.com/api/v3/"},
		{host: "http://127.0.0.1:8081/", org: "o", wantAction: "http://127.0.0.1:8081/organizations/o/settings/apps/new?state=S", wantAPI: "http://127.0.0.1:8081/api/v3/"},
		{host: "https://ghe.example.com/some/path", wantErr: "--github-host"},
		{host: "ftp://ghe.example.com", wantErr: "--github-host"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			web, err := GitHubWeb(tt.host)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := FormAction(web, tt.org, "S"); got != tt.wantAction {
				t.Errorf("action %q, want %q", got, tt.wantAction)
			}
			if got := APIURL(web); got != tt.wantAPI {
				t.Errorf("API %q, want %q", got, tt.wantAPI)
			}
		})
	}
}

const testPEM = "-----BEGIN RSA PRIVATE KEY-----\nc2VsZmNvZGUtdGVzdA==\n-----END RSA PRIVATE KEY-----\n"

func TestWriteCredentials(t *testing.T) {
	dir := t.TempDir()
	creds := github.ManifestCredentials{ID: 4242, Slug: "selfcode-acme", Name: "selfcode\napp_id: 1\nevil: x", Owner: "acme",
		HTMLURL: "https://github.com/apps/selfcode-acme", WebhookSecret: "whsec-123", PEM: testPEM, ClientSecret: "client-secret"}
	file := filepath.Join(dir, "creds.yml")
	if err := WriteCredentials(creds, WriteOptions{File: file, APIURL: "https://ghe.example.com/api/v3/"}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v, want 0600", st.Mode(), err)
	}
	cfg, err := config.Load(config.LoadOptions{File: file})
	if err != nil {
		t.Fatalf("the file is not a loadable config: %v", err)
	}
	if cfg.AppID != 4242 || cfg.WebhookSecret != "whsec-123" || cfg.GitHubAPIURL != "https://ghe.example.com/api/v3/" {
		t.Errorf("loaded %d %q %q", cfg.AppID, cfg.WebhookSecret, cfg.GitHubAPIURL)
	}
	if key, err := cfg.PrivateKeyPEM(); err != nil || string(key) != testPEM {
		t.Errorf("private key %q %v", key, err)
	}
	if err := cfg.ValidateServe(); err != nil {
		t.Errorf("serve would refuse it: %v", err)
	}
	data, _ := os.ReadFile(file)
	if strings.Contains(string(data), "client-secret") {
		t.Error("the client secret, which selfcode does not need, was written")
	}
	// Exactly one file in the directory: no temporary left.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries", len(ents))
	}

	// No silent overwrite; --force replaces.
	creds2 := creds
	creds2.ID, creds2.WebhookSecret = 777, "other"
	if err := WriteCredentials(creds2, WriteOptions{File: file}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("overwrite without force: %v", err)
	}
	if err := WriteCredentials(creds2, WriteOptions{File: file, Force: true}); err != nil {
		t.Fatal(err)
	}
	cfg, err = config.Load(config.LoadOptions{File: file})
	if err != nil || cfg.AppID != 777 || cfg.GitHubAPIURL != "https://api.github.com/" {
		t.Fatalf("after force: %v %+v", err, cfg)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("mode after force %v", st.Mode())
	}

	if err := WriteCredentials(github.ManifestCredentials{ID: 1}, WriteOptions{File: filepath.Join(dir, "x.yml")}); err == nil {
		t.Error("credentials without a key were written")
	}
	if err := CheckWritable(WriteOptions{File: filepath.Join(dir, "missing-dir", "x.yml")}); err == nil {
		t.Error("a file in a missing directory is writable?")
	}
}

// fakeExchanger hands out fixed credentials for one code.
type fakeExchanger struct {
	code  string
	creds github.ManifestCredentials
	calls int
}

func (f *fakeExchanger) CreateFromManifest(_ context.Context, code string) (github.ManifestCredentials, error) {
	f.calls++
	if code != f.code {
		return github.ManifestCredentials{}, errors.New("POST /app-manifests/" + code + "/conversions: 404 Not Found")
	}
	return f.creds, nil
}

func newFlow(t *testing.T, ex Exchanger, o Options) (*Flow, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.AppYML, o.Listener, o.Exchanger = appYML(t), ln, ex
	if o.WebhookURL == "" {
		o.WebhookURL = "https://bot.example.com/webhook"
	}
	if o.Write.File == "" {
		o.Write.File = filepath.Join(t.TempDir(), "creds.yml")
	}
	f, err := New(o)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	return f, o.Write.File
}

var noRedirect = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func fetch(t *testing.T, method, u, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var (
	formAction    = regexp.MustCompile(`<form id="register" action="([^"]+)" method="post">`)
	manifestValue = regexp.MustCompile(`<input type="hidden" name="manifest" value="([^"]+)">`)
)

// parseForm reads the setup page's form: its target and the manifest.
func parseForm(t *testing.T, page string) (*url.URL, map[string]any, string) {
	t.Helper()
	a, m := formAction.FindStringSubmatch(page), manifestValue.FindStringSubmatch(page)
	if a == nil || m == nil {
		t.Fatalf("no manifest form in the page:\n%s", page)
	}
	action, err := url.Parse(html.UnescapeString(a[1]))
	if err != nil {
		t.Fatal(err)
	}
	raw := html.UnescapeString(m[1])
	var manifest map[string]any
	if err := json.Unmarshal([]byte(raw), &manifest); err != nil {
		t.Fatalf("manifest %q: %v", raw, err)
	}
	return action, manifest, raw
}

func TestFlowCallbackRules(t *testing.T) {
	ex := &fakeExchanger{code: "good-code", creds: github.ManifestCredentials{ID: 99, Slug: "sc", Name: "sc", Owner: "me",
		HTMLURL: "https://github.com/apps/sc", WebhookSecret: "whsec-flow", PEM: testPEM}}
	f, file := newFlow(t, ex, Options{Org: "acme"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type ran struct {
		res Result
		err error
	}
	done := make(chan ran, 1)
	go func() { r, err := f.Run(ctx); done <- ran{r, err} }()
	base := strings.TrimSuffix(f.URL(), "/")

	code, page := fetch(t, http.MethodGet, f.URL(), "")
	if code != 200 {
		t.Fatalf("page: %d", code)
	}
	action, manifest, _ := parseForm(t, page)
	state := action.Query().Get("state")
	if action.String() != "https://github.com/organizations/acme/settings/apps/new?state="+state || len(state) < 32 {
		t.Fatalf("form action %s", action)
	}
	if manifest["redirect_url"] != base+"/callback" {
		t.Fatalf("redirect_url %v, want %s/callback", manifest["redirect_url"], base)
	}

	tests := []struct {
		name, path, host string
		want             int
		body             string
	}{
		{"another site's name for 127.0.0.1", "/", "evil.example:" + action.Port(), 421, ""},
		{"wrong state", "/callback?code=good-code&state=nope", "", 400, "does not belong to this setup run"},
		{"no state", "/callback?code=good-code", "", 400, "does not belong"},
		{"no code", "/callback?state=" + state, "", 400, "sent no code"},
		{"unknown code", "/callback?code=stale-code&state=" + state, "", 502, "did not hand over"},
		{"unknown path", "/other", "", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := fetch(t, http.MethodGet, base+tt.path, tt.host)
			if code != tt.want || !strings.Contains(body, tt.body) {
				t.Fatalf("GET %s = %d %q, want %d with %q", tt.path, code, body, tt.want, tt.body)
			}
			if strings.Contains(body, "stale-code") {
				t.Error("the page shows the code")
			}
		})
	}
	if code, _ := fetch(t, http.MethodPost, base+"/callback", ""); code != 405 {
		t.Errorf("POST callback: %d", code)
	}
	if _, err := os.Stat(file); err == nil {
		t.Fatal("credentials written before a valid callback")
	}

	code, body := fetch(t, http.MethodGet, base+"/callback?code=good-code&state="+state, "")
	if code != 200 || !strings.Contains(body, "Registered") || !strings.Contains(body, `href="https://github.com/apps/sc/installations/new"`) {
		t.Fatalf("callback: %d %s", code, body)
	}
	if strings.Contains(body, "whsec-flow") || strings.Contains(body, "BEGIN RSA") {
		t.Error("the page shows a secret")
	}
	r := <-done
	if r.err != nil || r.res.AppID != 99 || r.res.File != file || r.res.InstallURL() != "https://github.com/apps/sc/installations/new" {
		t.Fatalf("Run = %+v, %v", r.res, r.err)
	}
	cfg, err := config.Load(config.LoadOptions{File: file})
	if err != nil || cfg.AppID != 99 || cfg.WebhookSecret != "whsec-flow" {
		t.Fatalf("credentials file: %v %+v", err, cfg)
	}
	if ex.calls != 2 {
		t.Errorf("exchanger called %d times, want 2 (the stale code, the good one)", ex.calls)
	}
}

func TestFlowRunEndsWithContext(t *testing.T) {
	f, _ := newFlow(t, &fakeExchanger{}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Run(ctx); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("Run after cancel: %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	existing := filepath.Join(t.TempDir(), "creds.yml")
	if err := os.WriteFile(existing, []byte("app_id: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"bad org", Options{Org: "no/slashes"}, "not a GitHub organisation name"},
		{"bad host", Options{GitHubHost: "https://x.example/path"}, "--github-host"},
		{"existing file", Options{Write: WriteOptions{File: existing}}, "already exists"},
		{"no webhook", Options{WebhookURL: "not a url"}, "--webhook-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			o := tt.o
			o.AppYML, o.Listener, o.Exchanger = appYML(t), ln, &fakeExchanger{}
			if o.WebhookURL == "" {
				o.WebhookURL = "https://bot.example.com/webhook"
			}
			if o.Write.File == "" {
				o.Write.File = filepath.Join(t.TempDir(), "c.yml")
			}
			if _, err := New(o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestFlowAgainstFakeGitHub runs the whole flow against the fake GitHub:
// the page's form is posted to the fake's /settings/apps/new like a
// browser would, the fake redirects to the callback, and the code is
// exchanged through the real GitHub client.
func TestFlowAgainstFakeGitHub(t *testing.T) {
	for _, org := range []string{"", "acme"} {
		t.Run("org="+org, func(t *testing.T) {
			gh, err := fakegithub.New(fakegithub.Options{AppID: 31337})
			if err != nil {
				t.Fatal(err)
			}
			defer gh.Close()
			fac, err := github.New(github.Options{BaseURL: gh.URL()})
			if err != nil {
				t.Fatal(err)
			}
			f, file := newFlow(t, fac, Options{GitHubHost: gh.URL(), Org: org, Write: WriteOptions{APIURL: gh.URL()}})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			type ran struct {
				res Result
				err error
			}
			done := make(chan ran, 1)
			go func() { r, err := f.Run(ctx); done <- ran{r, err} }()

			_, page := fetch(t, http.MethodGet, f.URL(), "")
			action, _, raw := parseForm(t, page)
			wantPath := "/settings/apps/new"
			if org != "" {
				wantPath = "/organizations/" + org + "/settings/apps/new"
			}
			if action.Path != wantPath || "http://"+action.Host+"/" != gh.URL() {
				t.Fatalf("form action %s", action)
			}
			// The browser posts the form; GitHub answers with a redirect.
			resp, err := noRedirect.PostForm(action.String(), url.Values{"manifest": {raw}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc, err := resp.Location()
			if resp.StatusCode != http.StatusFound || err != nil {
				t.Fatalf("GitHub answered %d %v", resp.StatusCode, err)
			}
			if loc.Query().Get("state") != action.Query().Get("state") || loc.Query().Get("code") == "" {
				t.Fatalf("redirect %s", loc)
			}
			code, body := fetch(t, http.MethodGet, loc.String(), "")
			if code != 200 {
				t.Fatalf("callback: %d %s", code, body)
			}
			r := <-done
			if r.err != nil || r.res.AppID != 31337 {
				t.Fatalf("Run = %+v, %v", r.res, r.err)
			}
			wantOwner := "selfcode-owner"
			if org != "" {
				wantOwner = org
			}
			if r.res.Owner != wantOwner || r.res.Name != "selfcode" {
				t.Errorf("result %+v", r.res)
			}
			cfg, err := config.Load(config.LoadOptions{File: file})
			if err != nil {
				t.Fatal(err)
			}
			key, err := cfg.PrivateKeyPEM()
			if err != nil || string(key) != string(gh.PrivateKeyPEM()) {
				t.Fatalf("private key does not match the app's: %v", err)
			}
			if cfg.AppID != 31337 || len(cfg.WebhookSecret) < 20 || cfg.GitHubAPIURL != gh.URL() {
				t.Fatalf("config %d %d %q", cfg.AppID, len(cfg.WebhookSecret), cfg.GitHubAPIURL)
			}
			// The credentials work: once installed, the app reads who it is
			// (itself with its key, its bot user with an installation token).
			gh.AddInstallation(5, "acme")
			app, err := github.New(github.Options{BaseURL: cfg.GitHubAPIURL, AppID: cfg.AppID, PrivateKeyPEM: key})
			if err != nil {
				t.Fatal(err)
			}
			id, err := app.App(ctx)
			if err != nil || id.ID != 31337 {
				t.Fatalf("GET /app with the saved key: %+v %v", id, err)
			}
			if n := len(gh.RequestsMatching(http.MethodPost, "/app-manifests/")); n != 1 {
				t.Errorf("%d conversions, want 1", n)
			}
		})
	}
}

func FuzzBuildManifest(f *testing.F) {
	f.Add([]byte("url: https://x.example\nname: a\n"))
	f.Add([]byte("url: https://x.example\nhook_attributes: {active: false}\ndefault_permissions: {issues: write}\ndefault_events: [issues]\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Add([]byte("url: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, yml []byte) {
		m, err := BuildManifest(yml, ManifestOptions{WebhookURL: "https://bot.example.com/webhook", RedirectURL: "http://127.0.0.1:3000/callback"})
		if err != nil {
			return
		}
		var got map[string]any
		if err := json.Unmarshal(m.JSON(), &got); err != nil {
			t.Fatalf("manifest is not JSON: %v", err)
		}
		if m.WebhookURL() != "https://bot.example.com/webhook" || got["redirect_url"] != "http://127.0.0.1:3000/callback" {
			t.Fatalf("URLs not set: %s", m.JSON())
		}
		_, _, _ = m.Permissions(), m.Events(), m.Name()
	})
}
