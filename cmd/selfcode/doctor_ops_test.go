package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/selfcode/selfcode"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/fakegithub"
	"github.com/selfcode/selfcode/internal/fakeopenai"
)

// `selfcode doctor` against the simulated GitHub, the scripted model and
// the real engine: every line ok, exit 0; then one thing broken, and the
// exit status and the fix line say so.
func TestDoctorCommand(t *testing.T) {
	dockertest.NeedImage(t)
	gh, err := fakegithub.New(fakegithub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer gh.Close()
	gh.AddInstallation(3, "octo")
	model, err := fakeopenai.New(fakeopenai.Options{Roles: map[string]string{"m": "editor"}, Script: []fakeopenai.Step{{Content: "OK"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	addr := freeAddr(t)
	env := append(dockerEnv(),
		"SELFCODE_DATA_DIR="+t.TempDir(), "SELFCODE_WEBHOOK_SECRET="+strings.Repeat("s", 32),
		"SELFCODE_APP_ID="+strconv.FormatInt(gh.AppID(), 10), "SELFCODE_PRIVATE_KEY="+string(gh.PrivateKeyPEM()),
		"SELFCODE_GITHUB_API_URL="+gh.URL(), "SELFCODE_LLM_BASE_URL="+model.URL(), "SELFCODE_LLM_MODEL=m",
		"SELFCODE_ADDR="+addr, "SELFCODE_PUBLIC_URL=http://"+addr)
	out, code := runCLI(t, env, "doctor")
	if code != 0 || strings.Contains(out, "FAIL") || strings.Count(out, "\nok ")+1 < 14 {
		t.Fatalf("doctor: exit %d\n%s", code, out)
	}

	out, code = runCLI(t, append(env, "SELFCODE_WEBHOOK_SECRET="), "doctor", "--fast", "--json")
	var results []struct{ Check, Status, Fix string }
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&results); err != nil || code != 1 || len(results) != 5 {
		t.Fatalf("doctor --fast --json: exit %d, %v\n%s", code, err, out)
	}
	if results[3].Check != "webhook secret" || results[3].Status != "FAIL" || !strings.Contains(results[3].Fix, "SELFCODE_WEBHOOK_SECRET") {
		t.Fatalf("webhook secret: %+v", results[3])
	}
}

// serve runs the fast checks at start and logs each one.
func TestServeLogsTheFastChecks(t *testing.T) {
	p := start(t, t.TempDir())
	defer p.kill()
	var seen []string
	for _, line := range strings.Split(p.logText(), "\n") {
		var rec struct{ Msg, Check, Status string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "doctor" {
			seen = append(seen, rec.Check+"="+rec.Status)
		}
	}
	got := strings.Join(seen, " ")
	for _, want := range []string{"data directory=ok", "webhook secret=", "github app key=FAIL", "docker engine=", "sandbox image="} {
		if !strings.Contains(got, want) {
			t.Errorf("serve's start log lacks %q: %s", want, got)
		}
	}
	if strings.Contains(got, "model") || strings.Contains(got, "public url") {
		t.Errorf("serve ran slow checks at start: %s", got)
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// setup and doctor read ./app.yml in a checkout, and the copy the binary
// carries anywhere else (a release binary).
func TestReadManifest(t *testing.T) {
	t.Chdir(t.TempDir())
	got, err := readManifest("")
	if err != nil || !bytes.Equal(got, selfcode.AppManifest()) {
		t.Fatalf("without ./app.yml: %v", err)
	}
	os.WriteFile("app.yml", []byte("name: local\n"), 0o600)
	if got, err := readManifest(""); err != nil || string(got) != "name: local\n" {
		t.Fatalf("with ./app.yml: %q, %v", got, err)
	}
	if _, err := readManifest("missing.yml"); err == nil || !strings.Contains(err.Error(), "--manifest") {
		t.Fatalf("a missing --manifest: %v", err)
	}
}
