package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakegithub"
)

// setupRun is a `selfcode setup` process whose page is being driven.
type setupRun struct {
	cmd    *exec.Cmd
	page   string // http://127.0.0.1:PORT/
	mu     sync.Mutex
	out    bytes.Buffer
	exited chan struct{}
}

func (s *setupRun) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// startSetup runs `selfcode setup` on a free port and waits for its page.
func startSetup(t *testing.T, env []string, args ...string) *setupRun {
	t.Helper()
	s := &setupRun{exited: make(chan struct{})}
	s.cmd = exec.Command(testBinary(t), append([]string{"setup", "--port", "0"}, args...)...)
	s.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		open := regexp.MustCompile(`^Open (http://127\.0\.0\.1:\d+/) in your browser`)
		for sc.Scan() {
			s.mu.Lock()
			s.out.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := open.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[1]
			}
		}
	}()
	go func() { s.cmd.Wait(); pw.Close(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			s.cmd.Process.Kill()
			<-s.exited
		}
	})
	select {
	case s.page = <-ready:
	case <-s.exited:
		t.Fatalf("setup exited early:\n%s", s.output())
	case <-time.After(30 * time.Second):
		t.Fatalf("setup did not serve its page:\n%s", s.output())
	}
	return s
}

func (s *setupRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("setup did not exit:\n%s", s.output())
	}
	return s.cmd.ProcessState.ExitCode()
}

var noFollow = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func getPage(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := noFollow.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSetupCommand registers the App through `selfcode setup` against the
// fake GitHub, then starts `selfcode serve --config` on the file it wrote.
func TestSetupCommand(t *testing.T) {
	tests := []struct {
		name string
		org  string
		// viaForm: post the page's form to the fake's /settings/apps/new
		// (GitHub's side of the redirect); else redirect to the callback
		// with a code registered through AddManifestCode.
		viaForm bool
	}{
		{name: "personal account, through GitHub's form", viaForm: true},
		{name: "organisation, code from AddManifestCode", org: "acme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh, err := fakegithub.New(fakegithub.Options{AppID: 4711, AppSlug: "selfcode-e2e"})
			if err != nil {
				t.Fatal(err)
			}
			defer gh.Close()
			dir := t.TempDir()
			out := filepath.Join(dir, "selfcode-app.yml")
			args := []string{"--webhook-url", "https://bot.example.com/webhook", "--github-host", gh.URL(),
				"--manifest", filepath.Join("..", "..", "app.yml"), "--out", out}
			if tt.org != "" {
				args = append(args, "--org", tt.org)
			}
			s := startSetup(t, []string{"SELFCODE_GITHUB_API_URL=" + gh.URL()}, args...)

			code, page := getPage(t, s.page)
			if code != 200 {
				t.Fatalf("setup page: %d", code)
			}
			am := regexp.MustCompile(`action="([^"]+)"`).FindStringSubmatch(page)
			mm := regexp.MustCompile(`name="manifest" value="([^"]+)"`).FindStringSubmatch(page)
			if am == nil || mm == nil {
				t.Fatalf("no form in the page:\n%s", page)
			}
			action, err := url.Parse(html.UnescapeString(am[1]))
			if err != nil {
				t.Fatal(err)
			}
			raw := html.UnescapeString(mm[1])
			var manifest struct {
				Name           string            `json:"name"`
				RedirectURL    string            `json:"redirect_url"`
				Public         bool              `json:"public"`
				Permissions    map[string]string `json:"default_permissions"`
				Events         []string          `json:"default_events"`
				HookAttributes struct {
					URL    string `json:"url"`
					Active bool   `json:"active"`
				} `json:"hook_attributes"`
			}
			if err := json.Unmarshal([]byte(raw), &manifest); err != nil {
				t.Fatal(err)
			}
			if manifest.HookAttributes.URL != "https://bot.example.com/webhook" || !manifest.HookAttributes.Active ||
				manifest.RedirectURL != s.page+"callback" || manifest.Name != "selfcode" || manifest.Public ||
				manifest.Permissions["contents"] != "write" || len(manifest.Events) == 0 {
				t.Fatalf("manifest %s", raw)
			}
			wantPath := "/settings/apps/new"
			if tt.org != "" {
				wantPath = "/organizations/" + tt.org + "/settings/apps/new"
			}
			state := action.Query().Get("state")
			if action.Scheme+"://"+action.Host+"/" != gh.URL() || action.Path != wantPath || state == "" {
				t.Fatalf("form action %s", action)
			}

			// A redirect with another state is refused and changes nothing.
			if code, _ := getPage(t, s.page+"callback?code=x&state=forged"); code != 400 {
				t.Fatalf("forged state: %d", code)
			}

			wantSecret := ""
			var callback string
			if tt.viaForm {
				resp, err := noFollow.PostForm(action.String(), url.Values{"manifest": {raw}})
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				loc, err := resp.Location()
				if resp.StatusCode != http.StatusFound || err != nil {
					t.Fatalf("GitHub's form answered %d %v", resp.StatusCode, err)
				}
				callback = loc.String()
			} else {
				app := gh.AddManifestCode("code-"+tt.org, fakegithub.ManifestApp{Owner: tt.org, WebhookSecret: "whsec-from-github-0123456789"})
				wantSecret = app.WebhookSecret
				callback = s.page + "callback?" + url.Values{"code": {"code-" + tt.org}, "state": {state}}.Encode()
			}
			code, body := getPage(t, callback)
			if code != 200 || !strings.Contains(body, "Registered") {
				t.Fatalf("callback: %d\n%s", code, body)
			}
			if rc := s.wait(t); rc != 0 {
				t.Fatalf("setup exit %d:\n%s", rc, s.output())
			}

			// The file: mode 0600, a config serve can load, with the app's key.
			st, err := os.Stat(out)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("credentials file %v %v, want mode 0600", st, err)
			}
			cfg, err := config.Load(config.LoadOptions{File: out})
			if err != nil {
				t.Fatalf("credentials file does not load: %v", err)
			}
			key, err := cfg.PrivateKeyPEM()
			if err != nil || !bytes.Equal(key, gh.PrivateKeyPEM()) || cfg.AppID != 4711 || cfg.GitHubAPIURL != gh.URL() {
				t.Fatalf("credentials: app %d api %q key ok %v (%v)", cfg.AppID, cfg.GitHubAPIURL, bytes.Equal(key, gh.PrivateKeyPEM()), err)
			}
			if wantSecret != "" && cfg.WebhookSecret != wantSecret {
				t.Fatalf("webhook secret not the app's")
			}
			if len(cfg.WebhookSecret) < 20 {
				t.Fatalf("webhook secret %d chars", len(cfg.WebhookSecret))
			}

			// The output tells what to do next and never shows a secret.
			o := s.output()
			for _, want := range []string{"Registered GitHub App", "id 4711", out, "installations/new", "selfcode serve --config " + out} {
				if !strings.Contains(o, want) {
					t.Errorf("output lacks %q:\n%s", want, o)
				}
			}
			for _, secret := range []string{cfg.WebhookSecret, "PRIVATE KEY", strings.Split(string(key), "\n")[1]} {
				if strings.Contains(o, secret) {
					t.Errorf("output shows a secret:\n%s", o)
				}
			}

			// serve reads the file: it starts without SELFCODE_WEBHOOK_SECRET
			// in the environment and verifies deliveries with the file's secret.
			p := startServe(t, []string{"serve", "--config", out}, dir)
			body2 := commandPayload(t, 3, "/selfcode hello")
			if code, _, err := e2e.Deliver("http://"+p.addr+"/webhook", []byte(testSecret), "issue_comment", "setup-1", body2); err != nil || code != http.StatusUnauthorized {
				t.Fatalf("delivery signed with another secret: %d %v", code, err)
			}
			if code, _, err := e2e.Deliver("http://"+p.addr+"/webhook", []byte(cfg.WebhookSecret), "issue_comment", "setup-2", body2); err != nil || code != http.StatusAccepted {
				t.Fatalf("delivery signed with the file's secret: %d %v", code, err)
			}
			if logs := p.logText(); strings.Contains(logs, cfg.WebhookSecret) || strings.Contains(logs, "PRIVATE KEY") {
				t.Error("serve logged a secret from the file")
			}
		})
	}
}

// startServe runs `selfcode serve` (test runner) with args and an
// environment that carries no credentials.
func startServe(t *testing.T, args []string, dataDir string) *proc {
	t.Helper()
	runs := filepath.Join(dataDir, "runs.log")
	return launch(t, args, []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"SELFCODE_DATA_DIR=" + filepath.Join(dataDir, "data"), "SELFCODE_ADDR=127.0.0.1:0", "SELFCODE_ADMIN_ADDR=127.0.0.1:0",
		"SELFCODE_TEST_RUNS=" + runs, "SELFCODE_SHUTDOWN_TIMEOUT=5s", "SELFCODE_ENABLED=false",
	}, runs)
}

func TestSetupRefusesBadUsage(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "exists.yml")
	os.WriteFile(existing, []byte("app_id: 1\n"), 0o600)
	manifest := filepath.Join("..", "..", "app.yml")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no webhook url", []string{"setup", "--manifest", manifest}, "--webhook-url is required"},
		{"missing manifest", []string{"setup", "--webhook-url", "https://x.example/webhook", "--manifest", filepath.Join(dir, "none.yml")}, "read the manifest"},
		{"existing output", []string{"setup", "--webhook-url", "https://x.example/webhook", "--manifest", manifest, "--out", existing, "--port", "0"}, "already exists"},
		{"bad org", []string{"setup", "--webhook-url", "https://x.example/webhook", "--manifest", manifest, "--org", "a/b", "--port", "0"}, "organisation name"},
		{"bad port", []string{"setup", "--webhook-url", "https://x.example/webhook", "--port", "70000"}, "not a port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runCLI(t, nil, tt.args...)
			if code != 2 || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, output %q; want exit 2 with %q", code, out, tt.want)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "app_id: 1\n" {
		t.Error("setup touched an existing credentials file")
	}
}
