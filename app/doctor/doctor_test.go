package doctor

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode"
	"github.com/selfcode/selfcode/app/config"
	gh "github.com/selfcode/selfcode/app/github"
	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fakeopenai"
)

// load is a configuration from env alone (nothing from the process's
// environment but the sandbox image under test), with the data directory
// in a scratch directory and the model pointed nowhere unless env says
// otherwise.
func load(t *testing.T, env ...string) *config.Config {
	t.Helper()
	set := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	defaults := []string{"SELFCODE_DATA_DIR=" + t.TempDir(), "SELFCODE_LLM_BASE_URL=http://127.0.0.1:1/v1"}
	if img := os.Getenv("SELFCODE_SANDBOX_IMAGE"); img != "" {
		defaults = append(defaults, "SELFCODE_SANDBOX_IMAGE="+img)
	}
	for _, kv := range defaults {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			env = append(env, kv)
		}
	}
	cfg, err := config.Load(config.LoadOptions{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newDoctor(t *testing.T, cfg *config.Config, o ...func(*Options)) *Doctor {
	t.Helper()
	opts := Options{Config: cfg, Manifest: selfcode.AppManifest(), CheckTimeout: time.Minute,
		GitHub: func(g *gh.Options) { g.MaxAttempts = 1 }}
	for _, f := range o {
		f(&opts)
	}
	d := New(opts)
	t.Cleanup(func() { d.Close() })
	return d
}

// run runs every check and returns the results by name.
func run(t *testing.T, d *Doctor, only ...string) map[string]Result {
	t.Helper()
	out := map[string]Result{}
	for _, c := range allChecks() {
		if len(only) > 0 && !slices.Contains(only, c.name) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r := c.run(d, ctx)
		cancel()
		r.Check = c.name
		out[c.name] = r
	}
	return out
}

// expect checks a result's status, and that its detail and fix say what
// they must.
func expect(t *testing.T, r Result, status Status, detail, fix string) {
	t.Helper()
	if r.Status != status || !strings.Contains(r.Detail, detail) || !strings.Contains(r.Fix, fix) {
		t.Errorf("%s: %s %q\n  fix: %q\nwant %s with detail %q and fix %q", r.Check, r.Status, r.Detail, r.Fix, status, detail, fix)
	}
	if (status == Fail || status == Warn) && r.Fix == "" {
		t.Errorf("%s: %s without a fix", r.Check, status)
	}
}

// Printed, a failure carries its fix on the next line; only failures make
// doctor fail.
func TestWriteAndFailed(t *testing.T) {
	t.Parallel()
	results := []Result{
		{Check: CheckEngine, Status: OK, Detail: "Docker 27", Fix: "unused"},
		{Check: CheckWebhookSecret, Status: Fail, Detail: "not set", Fix: "set it"},
		{Check: CheckPublicURL, Status: Warn, Detail: "unknown", Fix: "set SELFCODE_PUBLIC_URL"},
		{Check: CheckApp, Status: Skip, Detail: "needs a passing github app key check"},
	}
	var b bytes.Buffer
	Write(&b, results)
	want := "" +
		"ok    docker engine   Docker 27\n" +
		"FAIL  webhook secret  not set\n" +
		"                      fix: set it\n" +
		"warn  public url      unknown\n" +
		"                      fix: set SELFCODE_PUBLIC_URL\n" +
		"skip  github app      needs a passing github app key check\n"
	if b.String() != want {
		t.Errorf("Write:\n%s\nwant:\n%s", b.String(), want)
	}
	if !Failed(results) || Failed(results[2:]) {
		t.Error("Failed does not follow FAIL lines")
	}
}

func TestWebhookSecret(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		secret, detail, fix string
		status              Status
	}{
		{"", "SELFCODE_WEBHOOK_SECRET is not set", "set SELFCODE_WEBHOOK_SECRET", Fail},
		{"short", "only 5 characters", "long random secret", Warn},
		{strings.Repeat("x", 40), "set (40 characters)", "", OK},
	} {
		r := run(t, newDoctor(t, load(t, "SELFCODE_WEBHOOK_SECRET="+tt.secret)), CheckWebhookSecret)[CheckWebhookSecret]
		expect(t, r, tt.status, tt.detail, tt.fix)
	}
}

func TestDataDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, newDoctor(t, load(t, "SELFCODE_DATA_DIR="+filepath.Join(dir, "new"))), CheckDataDir)[CheckDataDir]
	expect(t, r, OK, "is writable", "")
	if fi, err := os.Stat(filepath.Join(dir, "new")); err != nil || !fi.IsDir() {
		t.Fatalf("the data directory was not created: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "new")); len(entries) != 0 {
		t.Errorf("the probe file was left behind: %v", entries)
	}

	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o600)
	r = run(t, newDoctor(t, load(t, "SELFCODE_DATA_DIR="+filepath.Join(file, "data"))), CheckDataDir)[CheckDataDir]
	expect(t, r, Fail, "cannot create", "a directory the user running selfcode")

	// A directory that is there but takes no new file, even from root (the
	// tests may run as root, which permissions do not stop): one removed
	// while held open, reached through its descriptor.
	gone, err := os.MkdirTemp(dir, "gone")
	if err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(gone)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	heldPath := fmt.Sprintf("/dev/fd/%d", held.Fd())
	if fi, err := os.Stat(heldPath); err != nil || !fi.IsDir() {
		t.Fatalf("the removed directory is not reachable as %s: %v", heldPath, err)
	}
	r = run(t, newDoctor(t, load(t, "SELFCODE_DATA_DIR="+heldPath)), CheckDataDir)[CheckDataDir]
	expect(t, r, Fail, "cannot write in "+heldPath, "make "+heldPath+" a directory the user running selfcode")

	free, err := freeBytes(dir)
	if err != nil {
		t.Skipf("free space not measured here: %v", err)
	}
	r = run(t, newDoctor(t, load(t, "SELFCODE_DATA_DIR="+dir), func(o *Options) { o.MinFreeBytes = free * 4 }), CheckDataDir)[CheckDataDir]
	expect(t, r, Fail, "at least", "free space on the file system of "+dir)
	r = run(t, newDoctor(t, load(t, "SELFCODE_DATA_DIR="+dir), func(o *Options) { o.MinFreeBytes = free / 2 }), CheckDataDir)[CheckDataDir]
	expect(t, r, Warn, "free; less than", "free space")
}

// The engine's checks against the real engine.
func TestDockerEngine(t *testing.T) {
	dockertest.NeedImage(t)
	r := run(t, newDoctor(t, load(t)), CheckEngine)[CheckEngine]
	expect(t, r, OK, "Docker ", "")
	if !strings.Contains(r.Detail, "runtime ") || !strings.Contains(r.Detail, "cgroup v") {
		t.Errorf("detail %q names no runtime or cgroup version", r.Detail)
	}

	r = run(t, newDoctor(t, load(t, "SELFCODE_SANDBOX_RUNTIME=selfcode-no-such-runtime")), CheckEngine)[CheckEngine]
	expect(t, r, Fail, `runtime "selfcode-no-such-runtime" not offered`, `install the runtime "selfcode-no-such-runtime"`)

	// A client held to an API older than selfcode needs (DOCKER_API_VERSION
	// turns negotiation off), as an engine older than 20.10 would hold it.
	t.Setenv("DOCKER_API_VERSION", "1.40")
	r = run(t, newDoctor(t, load(t)), CheckEngine)[CheckEngine]
	expect(t, r, Fail, "(API 1.40)", "upgrade the Docker engine to 20.10 or later")
	expect(t, r, Fail, "selfcode needs API "+sandbox.MinAPIVersion+" (Docker 20.10) or later", "DOCKER_API_VERSION is set, unset it")

	t.Setenv("DOCKER_API_VERSION", "")
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	res := run(t, newDoctor(t, load(t)), CheckEngine, CheckImage, CheckIsolation, CheckToolchains)
	expect(t, res[CheckEngine], Fail, "docker engine unavailable", "start the Docker engine, or point DOCKER_HOST at it")
	for _, c := range []string{CheckImage, CheckIsolation, CheckToolchains} {
		expect(t, res[c], Skip, "needs a passing docker engine check", "")
	}
}

// What the engine says of itself: its version against the minimum, and
// its own warnings (captured from `docker info` on engines without swap
// accounting and bridge netfilter), each with its fix.
func TestEngineVerdict(t *testing.T) {
	t.Parallel()
	engine := sandbox.EngineInfo{ServerVersion: "20.10.24+dfsg1", APIVersion: "1.41", OS: "Debian GNU/Linux 12 (bookworm)", CgroupVersion: "2"}
	warned := engine
	warned.Warnings = []string{"WARNING: No swap limit support", "WARNING: bridge-nf-call-iptables is disabled"}
	old := engine
	old.ServerVersion, old.APIVersion = "19.03.15", "1.40"
	newer := engine
	newer.ServerVersion, newer.APIVersion = "28.3.2", "1.51"
	for _, tt := range []struct {
		name        string
		info        sandbox.EngineInfo
		status      Status
		detail, fix string
	}{
		{"20.10", engine, OK, "Docker 20.10.24+dfsg1 (API 1.41) on Debian GNU/Linux 12 (bookworm), runtime runc, cgroup v2", ""},
		{"newer", newer, OK, "Docker 28.3.2 (API 1.51)", ""},
		{"warnings", warned, Warn, "the engine warns: WARNING: No swap limit support; WARNING: bridge-nf-call-iptables is disabled", "see `docker info`: a missing limit makes every job fail"},
		{"too old", old, Fail, "Docker 19.03.15 (API 1.40) on Debian GNU/Linux 12 (bookworm), runtime runc, cgroup v2; selfcode needs API 1.41 (Docker 20.10) or later", "upgrade the Docker engine to 20.10 or later"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := engineVerdict(tt.info, "runc")
			r.Check = CheckEngine
			expect(t, r, tt.status, tt.detail, tt.fix)
		})
	}
}

func TestSandboxImage(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	r := run(t, newDoctor(t, load(t, "SELFCODE_SANDBOX_IMAGE="+dockertest.Image())), CheckImage)[CheckImage]
	expect(t, r, OK, dockertest.Image()+" present", "")

	missing := "selfcode-sandbox-test-" + dockertest.Suffix() + ":missing"
	res := run(t, newDoctor(t, load(t, "SELFCODE_SANDBOX_IMAGE="+missing)), CheckImage, CheckIsolation, CheckToolchains)
	expect(t, res[CheckImage], Fail, missing+" is not on the engine", "selfcode image build")
	expect(t, res[CheckIsolation], Skip, "needs a passing sandbox image check", "")
	expect(t, res[CheckToolchains], Skip, "needs a passing sandbox image check", "")

	tiny := "selfcode-sandbox-test-" + dockertest.Suffix() + ":tiny"
	dockertest.ImportTiny(t, tiny, "/usr/bin/sleep", "/usr/bin/timeout", "/usr/bin/cat")
	r = run(t, newDoctor(t, load(t, "SELFCODE_SANDBOX_IMAGE="+tiny)), CheckImage)[CheckImage]
	expect(t, r, Warn, "names no cache directory", "LABEL io.selfcode.cache=/cache")
}

// Isolation is proved in a real container; what the checks say when the
// engine does not isolate follows from what the container saw.
func TestSandboxIsolation(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	r := run(t, newDoctor(t, load(t, "SELFCODE_SANDBOX_MEMORY_MB=300", "SELFCODE_SANDBOX_PIDS=99")), CheckIsolation)[CheckIsolation]
	expect(t, r, OK, "no network (only lo) and its cgroup holds the limits: memory 300 MiB, pids 99", "")

	want := sandbox.Limits{Memory: 300 << 20, Pids: 99}
	for _, tt := range []struct {
		name   string
		ifaces []string
		got    sandbox.CgroupLimits
		detail string
		fix    string
	}{
		{"a network", []string{"eth0", "lo"}, sandbox.CgroupLimits{Memory: 300 << 20, Pids: 99}, "sees the interfaces [eth0 lo]", "does not isolate the network"},
		{"no memory limit", []string{"lo"}, sandbox.CgroupLimits{Memory: -1, Pids: 99}, "memory unlimited (want 300 MiB)", "enable the memory and pids cgroup controllers"},
		{"no pids limit", []string{"lo"}, sandbox.CgroupLimits{Memory: 300 << 20, Pids: -1}, "pids unlimited (want 99)", "enable the memory and pids cgroup controllers"},
		{"no controllers", []string{"lo"}, sandbox.CgroupLimits{}, "memory 0 MiB (want 300 MiB), pids 0 (want 99)", "cgroup"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := isolationVerdict(tt.ifaces, tt.got, want)
			r.Check = CheckIsolation
			expect(t, r, Fail, tt.detail, tt.fix)
		})
	}
	r = startFailure(&sandbox.WarningError{Warnings: []string{"Your kernel does not support memory limit capabilities"}})
	r.Check = CheckIsolation
	expect(t, r, Fail, "weaker limits than configured: Your kernel does not support memory", "enable the memory and pids cgroup controllers")
}

func TestSandboxToolchains(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	r := run(t, newDoctor(t, load(t)), CheckToolchains)[CheckToolchains]
	expect(t, r, OK, "go ", "")
	for _, tool := range []string{"python ", "venv", "pip ", "pytest ", "node v", "npm ", "tsc ", "jest ", "mocha ", "git ", "make "} {
		if !strings.Contains(r.Detail, tool) {
			t.Errorf("toolchains %q lack %q", r.Detail, tool)
		}
	}

	tiny := "selfcode-sandbox-test-" + dockertest.Suffix() + ":tiny"
	dockertest.ImportTiny(t, tiny, "/usr/bin/sleep", "/usr/bin/timeout", "/usr/bin/cat")
	r = run(t, newDoctor(t, load(t, "SELFCODE_SANDBOX_IMAGE="+tiny)), CheckToolchains)[CheckToolchains]
	expect(t, r, Fail, tiny+" lacks go (\"go version\" exits 127", "selfcode image build --force")
	if !strings.Contains(r.Detail, "jest (") || !strings.Contains(r.Detail, "python (") {
		t.Errorf("not every missing toolchain is named: %s", r.Detail)
	}
}

// githubEnv points the configuration at a fake GitHub.
func githubEnv(fake *fakegithub.Server, key []byte) []string {
	return []string{"SELFCODE_GITHUB_API_URL=" + fake.URL(), "SELFCODE_APP_ID=" + strconv.FormatInt(fake.AppID(), 10), "SELFCODE_PRIVATE_KEY=" + string(key)}
}

func newFake(t *testing.T, o fakegithub.Options) *fakegithub.Server {
	t.Helper()
	fake, err := fakegithub.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	return fake
}

func otherKey(t *testing.T) []byte {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

var githubChecks = []string{CheckAppKey, CheckApp, CheckInstallations, CheckPermissions}

func TestGitHubApp(t *testing.T) {
	t.Parallel()
	t.Run("all good", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t, fakegithub.Options{})
		fake.AddInstallation(7, "octo")
		res := run(t, newDoctor(t, load(t, githubEnv(fake, fake.PrivateKeyPEM())...)), githubChecks...)
		expect(t, res[CheckAppKey], OK, "RSA 2048-bit key for App 1", "")
		expect(t, res[CheckApp], OK, "the JWT is accepted: App selfcode-test (id 1, owned by selfcode-owner)", "")
		expect(t, res[CheckInstallations], OK, "1: octo (7)", "")
		expect(t, res[CheckPermissions], OK, "have app.yml's 6 permissions and 6 events", "")
	})
	t.Run("not configured", func(t *testing.T) {
		t.Parallel()
		res := run(t, newDoctor(t, load(t)), githubChecks...)
		expect(t, res[CheckAppKey], Fail, "no GitHub App is configured", "selfcode setup --webhook-url")
		expect(t, res[CheckApp], Skip, "needs a passing github app key check", "")
		expect(t, res[CheckInstallations], Skip, "needs a passing github app check", "")
		expect(t, res[CheckPermissions], Skip, "needs a passing github app check", "")
	})
	t.Run("no app id", func(t *testing.T) {
		t.Parallel()
		r := run(t, newDoctor(t, load(t, "SELFCODE_PRIVATE_KEY="+string(otherKey(t)))), CheckAppKey)[CheckAppKey]
		expect(t, r, Fail, "SELFCODE_APP_ID is not set", "set SELFCODE_APP_ID")
	})
	t.Run("key does not parse", func(t *testing.T) {
		t.Parallel()
		bad := "-----BEGIN RSA PRIVATE KEY-----\nbm90IGEga2V5\n-----END RSA PRIVATE KEY-----\n"
		r := run(t, newDoctor(t, load(t, "SELFCODE_APP_ID=1", "SELFCODE_PRIVATE_KEY="+bad)), CheckAppKey)[CheckAppKey]
		expect(t, r, Fail, "the private key does not parse", "generate a private key")
		if strings.Contains(r.Detail, "bm90IGEga2V5") {
			t.Error("the key's text is in the output")
		}
	})
	t.Run("key of another app", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t, fakegithub.Options{})
		res := run(t, newDoctor(t, load(t, githubEnv(fake, otherKey(t))...)), githubChecks...)
		expect(t, res[CheckAppKey], OK, "RSA 2048-bit key", "")
		expect(t, res[CheckApp], Fail, "GitHub refused the App's JWT", "one of App 1's private keys")
		expect(t, res[CheckInstallations], Skip, "needs a passing github app check", "")
	})
	t.Run("GitHub unreachable", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t, fakegithub.Options{})
		env := append(githubEnv(fake, fake.PrivateKeyPEM())[1:], "SELFCODE_GITHUB_API_URL=http://"+closedAddr(t)+"/")
		r := run(t, newDoctor(t, load(t, env...)), CheckApp)[CheckApp]
		expect(t, r, Fail, "get app", "check SELFCODE_GITHUB_API_URL")
	})
	t.Run("installations not listed", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t, fakegithub.Options{})
		fake.AddInstallation(7, "octo")
		fake.InjectFault(fakegithub.Fault{Method: http.MethodGet, PathPattern: "/app/installations", Status: http.StatusBadGateway})
		res := run(t, newDoctor(t, load(t, githubEnv(fake, fake.PrivateKeyPEM())...)), githubChecks...)
		expect(t, res[CheckApp], OK, "the JWT is accepted", "")
		expect(t, res[CheckInstallations], Fail, "GitHub accepted the App's JWT but did not list its installations", "run `selfcode doctor` again in a while")
		if !strings.Contains(res[CheckInstallations].Detail, "502") || !strings.Contains(res[CheckInstallations].Fix, fake.URL()) {
			t.Errorf("the failure does not say what GitHub answered, or the fix names no API URL: %+v", res[CheckInstallations])
		}
		expect(t, res[CheckPermissions], Skip, "needs a passing github installations check", "")
	})
	t.Run("installed nowhere", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t, fakegithub.Options{})
		r := run(t, newDoctor(t, load(t, githubEnv(fake, fake.PrivateKeyPEM())...)), CheckInstallations)[CheckInstallations]
		expect(t, r, Fail, "installed nowhere", "/apps/selfcode-test/installations/new")
	})
	t.Run("permission missing", func(t *testing.T) {
		t.Parallel()
		perms := fakegithub.AppYMLPermissions()
		delete(perms, "actions")
		perms["contents"] = "read"
		fake := newFake(t, fakegithub.Options{Permissions: perms})
		fake.AddInstallation(7, "octo")
		r := run(t, newDoctor(t, load(t, githubEnv(fake, fake.PrivateKeyPEM())...)), CheckPermissions)[CheckPermissions]
		expect(t, r, Fail, "the App lacks what app.yml asks for: actions: read (has none), contents: write (has read)", "/settings/apps/selfcode-test/permissions")
	})
	t.Run("event missing", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t, fakegithub.Options{Events: []string{"issue_comment", "issues", "pull_request", "pull_request_review", "pull_request_review_comment"}})
		fake.AddInstallation(7, "octo")
		r := run(t, newDoctor(t, load(t, githubEnv(fake, fake.PrivateKeyPEM())...)), CheckPermissions)[CheckPermissions]
		expect(t, r, Fail, "event check_run", "Permissions & events")
	})
	t.Run("installation has not accepted", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t, fakegithub.Options{})
		fake.AddInstallation(7, "octo")
		old := fakegithub.AppYMLPermissions()
		delete(old, "actions")
		fake.SetInstallationPermissions(7, old)
		r := run(t, newDoctor(t, load(t, githubEnv(fake, fake.PrivateKeyPEM())...)), CheckPermissions)[CheckPermissions]
		expect(t, r, Fail, "the installation on octo has not accepted actions: read", "an owner of octo reviews and accepts the new permissions at "+fake.URL())
	})
}

// A model endpoint scripted with fakeopenai.
func newModel(t *testing.T, o fakeopenai.Options) *fakeopenai.Server {
	t.Helper()
	fo, err := fakeopenai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fo.Close() })
	return fo
}

var modelChecks = []string{CheckModelEndpoint, CheckModelNames, CheckModelCall}

func TestModelEndpoint(t *testing.T) {
	t.Parallel()
	roles := map[string]string{"m-plan": "planner", "m-edit": "editor"}
	modelEnv := func(url string, more ...string) []string {
		return append([]string{"SELFCODE_LLM_BASE_URL=" + url, "SELFCODE_LLM_API_KEY=k", "SELFCODE_LLM_MODEL=m-edit", "SELFCODE_LLM_MODEL_PLANNER=m-plan"}, more...)
	}
	t.Run("all good", func(t *testing.T) {
		t.Parallel()
		fo := newModel(t, fakeopenai.Options{Roles: roles, Script: []fakeopenai.Step{{Role: "editor", Content: "OK"}}})
		res := run(t, newDoctor(t, load(t, modelEnv(fo.URL())...)), modelChecks...)
		expect(t, res[CheckModelEndpoint], OK, "answers and lists 2 model(s)", "")
		expect(t, res[CheckModelNames], OK, "m-plan (planner), m-edit (editor, fixer, reporter)", "")
		expect(t, res[CheckModelCall], OK, `m-edit answered "OK"`, "")
		if n := len(fo.RequestsFor("m-edit")); n != 1 {
			t.Errorf("%d calls, want one tiny call", n)
		}
	})
	t.Run("model not served", func(t *testing.T) {
		t.Parallel()
		fo := newModel(t, fakeopenai.Options{Roles: roles})
		r := run(t, newDoctor(t, load(t, modelEnv(fo.URL(), "SELFCODE_LLM_MODEL_FIXER=gpt-nope")...)), CheckModelNames)[CheckModelNames]
		expect(t, r, Fail, "does not serve gpt-nope (fixer)", "to models it serves: m-edit, m-plan")
	})
	t.Run("key refused", func(t *testing.T) {
		t.Parallel()
		fo := newModel(t, fakeopenai.Options{Roles: roles, APIKey: "right"})
		res := run(t, newDoctor(t, load(t, modelEnv(fo.URL())...)), modelChecks...)
		expect(t, res[CheckModelEndpoint], Fail, "not authorised", "check SELFCODE_LLM_API_KEY")
		expect(t, res[CheckModelNames], Skip, "needs a passing model endpoint check", "")
		expect(t, res[CheckModelCall], Skip, "needs a passing model endpoint check", "")
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		r := run(t, newDoctor(t, load(t, modelEnv("http://"+closedAddr(t)+"/v1")...)), CheckModelEndpoint)[CheckModelEndpoint]
		expect(t, r, Fail, "connection failed", "check SELFCODE_LLM_BASE_URL")
	})
	t.Run("call refused", func(t *testing.T) {
		t.Parallel()
		fo := newModel(t, fakeopenai.Options{Roles: roles, Script: []fakeopenai.Step{{Status: 404, Message: "The model `m-edit` does not exist"}}})
		r := run(t, newDoctor(t, load(t, modelEnv(fo.URL())...)), CheckModelCall)[CheckModelCall]
		expect(t, r, Fail, "does not exist", "check the model names")
	})
	t.Run("quota", func(t *testing.T) {
		t.Parallel()
		fo := newModel(t, fakeopenai.Options{Roles: roles, Script: []fakeopenai.Step{{Status: 429, Message: "You exceeded your current quota"}}})
		r := run(t, newDoctor(t, load(t, modelEnv(fo.URL())...)), CheckModelCall)[CheckModelCall]
		expect(t, r, Fail, "exceeded your current quota", "quota is used up")
	})
	t.Run("endpoint that lists nothing", func(t *testing.T) {
		t.Parallel()
		fo := newModel(t, fakeopenai.Options{Roles: roles, Script: []fakeopenai.Step{{Content: "OK"}}})
		target, _ := url.Parse(strings.TrimSuffix(fo.URL(), "/v1"))
		proxy := httputil.NewSingleHostReverseProxy(target)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/models") {
				http.NotFound(w, r)
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		res := run(t, newDoctor(t, load(t, modelEnv(srv.URL+"/v1")...)), modelChecks...)
		expect(t, res[CheckModelEndpoint], OK, "does not list its models", "")
		expect(t, res[CheckModelNames], Warn, "cannot tell whether m-plan (planner)", "each configured name is one the endpoint serves")
		expect(t, res[CheckModelCall], OK, "answered", "")
	})
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestPublicURL(t *testing.T) {
	t.Parallel()
	t.Run("reaches this machine", func(t *testing.T) {
		t.Parallel()
		addr := closedAddr(t) // free: doctor listens there itself
		r := run(t, newDoctor(t, load(t, "SELFCODE_ADDR="+addr, "SELFCODE_PUBLIC_URL=http://"+addr)), CheckPublicURL)[CheckPublicURL]
		expect(t, r, OK, "http://"+addr+" (SELFCODE_PUBLIC_URL) reaches SELFCODE_ADDR "+addr+" on this machine", "")
	})
	t.Run("reaches another server", func(t *testing.T) {
		t.Parallel()
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("hello")) }))
		t.Cleanup(other.Close)
		addr := closedAddr(t)
		r := run(t, newDoctor(t, load(t, "SELFCODE_ADDR="+addr, "SELFCODE_PUBLIC_URL="+other.URL)), CheckPublicURL)[CheckPublicURL]
		expect(t, r, Fail, "answers (HTTP 200), but not from SELFCODE_ADDR "+addr, "make that address reach SELFCODE_ADDR ("+addr+")")
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		r := run(t, newDoctor(t, load(t, "SELFCODE_ADDR="+closedAddr(t), "SELFCODE_PUBLIC_URL=http://"+closedAddr(t))), CheckPublicURL)[CheckPublicURL]
		expect(t, r, Fail, "is not reachable from here", "GitHub delivers webhooks to http://")
	})
	t.Run("a running selfcode", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t, fakegithub.Options{})
		cfg := load(t, append(githubEnv(fake, fake.PrivateKeyPEM()), "SELFCODE_WEBHOOK_SECRET=s", "SELFCODE_ADDR=127.0.0.1:0", "SELFCODE_ADMIN_ADDR=127.0.0.1:0")...)
		srv, err := server.New(context.Background(), server.Options{Config: cfg, Pipeline: e2e.NewScripted()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		t.Cleanup(func() { stop(); <-done })
		addr := srv.PublicAddr()
		r := run(t, newDoctor(t, load(t, "SELFCODE_ADDR="+addr, "SELFCODE_PUBLIC_URL=http://"+addr+"/")), CheckPublicURL)[CheckPublicURL]
		expect(t, r, OK, "reaches a running selfcode (SELFCODE_ADDR "+addr+" is in use)", "")
	})
	t.Run("something else holds the address", func(t *testing.T) {
		t.Parallel()
		other := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(other.Close)
		addr := strings.TrimPrefix(other.URL, "http://")
		r := run(t, newDoctor(t, load(t, "SELFCODE_ADDR="+addr, "SELFCODE_PUBLIC_URL="+other.URL)), CheckPublicURL)[CheckPublicURL]
		expect(t, r, Fail, "answers HTTP 404", "make that address reach SELFCODE_ADDR")
	})
	t.Run("from the App's webhook URL", func(t *testing.T) {
		t.Parallel()
		addr := closedAddr(t)
		fake := newFake(t, fakegithub.Options{WebhookURL: "http://" + addr + "/webhook"})
		env := append(githubEnv(fake, fake.PrivateKeyPEM()), "SELFCODE_ADDR="+addr)
		r := run(t, newDoctor(t, load(t, env...)), CheckPublicURL)[CheckPublicURL]
		expect(t, r, OK, "http://"+addr+" (the App's webhook URL) reaches SELFCODE_ADDR", "")
	})
	t.Run("the App delivers elsewhere", func(t *testing.T) {
		t.Parallel()
		addr := closedAddr(t)
		fake := newFake(t, fakegithub.Options{WebhookURL: "https://old.example.com/webhook"})
		env := append(githubEnv(fake, fake.PrivateKeyPEM()), "SELFCODE_ADDR="+addr, "SELFCODE_PUBLIC_URL=http://"+addr)
		r := run(t, newDoctor(t, load(t, env...)), CheckPublicURL)[CheckPublicURL]
		expect(t, r, Warn, "but the App delivers webhooks to https://old.example.com/webhook", "set the App's webhook URL (its settings page, General) to http://"+addr+"/webhook")
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		r := run(t, newDoctor(t, load(t)), CheckPublicURL)[CheckPublicURL]
		expect(t, r, Warn, "SELFCODE_PUBLIC_URL is not set", "set SELFCODE_PUBLIC_URL")
	})
}

// The fast subset is what serve runs at start: local checks only.
func TestFastChecks(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	d := newDoctor(t, load(t, "SELFCODE_WEBHOOK_SECRET="+strings.Repeat("s", 20)))
	results := d.Run(context.Background(), true)
	var names []string
	for _, r := range results {
		names = append(names, r.Check)
	}
	if strings.Join(names, ",") != strings.Join([]string{CheckEngine, CheckImage, CheckDataDir, CheckWebhookSecret, CheckAppKey}, ",") {
		t.Fatalf("fast checks %v", names)
	}
	if !Failed(results) {
		t.Fatal("the failing engine and missing App did not fail the fast checks")
	}
}
