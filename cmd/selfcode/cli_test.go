package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func runCLI(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(testBinary(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestServeRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	os.WriteFile(bad, []byte("addr: \":8080\"\nworkerz: 3\n"), 0o600)
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"empty secret", []string{"SELFCODE_DATA_DIR=" + dir}, []string{"serve"}, "SELFCODE_WEBHOOK_SECRET"},
		{"unknown yaml key", []string{"SELFCODE_WEBHOOK_SECRET=x"}, []string{"serve", "--config", bad}, "workerz"},
		{"bad duration", []string{"SELFCODE_WEBHOOK_SECRET=x", "SELFCODE_OVERNIGHT_MAX_DURATION=soon"}, []string{"serve"}, "SELFCODE_OVERNIGHT_MAX_DURATION"},
		{"bad cron", []string{"SELFCODE_WEBHOOK_SECRET=x", "SELFCODE_OVERNIGHT_SCHEDULE=every night"}, []string{"serve"}, "SELFCODE_OVERNIGHT_SCHEDULE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runCLI(t, tt.env, tt.args...)
			if code != 2 || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, output %q; want exit 2 naming %s", code, out, tt.want)
			}
		})
	}
}

func TestJobsCommands(t *testing.T) {
	data := t.TempDir()
	p := start(t, data, "SELFCODE_ENABLED=false")
	code, out, err := p.deliver("issue_comment", "cli-1", commandPayload(t, 5, "/selfcode via cli"))
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("deliver: %d %v", code, err)
	}
	id := out["job_id"].(string)
	env := []string{"SELFCODE_ADMIN_ADDR=" + p.admin}
	list, c := runCLI(t, env, "jobs", "list")
	if c != 0 || !strings.Contains(list, id) || !strings.Contains(list, "queued") {
		t.Fatalf("jobs list (%d):\n%s", c, list)
	}
	show, c := runCLI(t, env, "jobs", "show", id)
	if c != 0 || !strings.Contains(show, `"instructions": "via cli"`) {
		t.Fatalf("jobs show (%d):\n%s", c, show)
	}
	cancel, c := runCLI(t, env, "jobs", "cancel", id)
	if c != 0 || !strings.Contains(cancel, "canceled") {
		t.Fatalf("jobs cancel (%d):\n%s", c, cancel)
	}
	again, c := runCLI(t, env, "jobs", "cancel", id)
	if c != 1 || !strings.Contains(again, "already canceled") {
		t.Fatalf("second cancel (%d):\n%s", c, again)
	}
	if _, c := runCLI(t, env, "jobs", "show"); c != 2 {
		t.Fatalf("missing id: exit %d, want 2", c)
	}
	v, c := runCLI(t, nil, "version")
	if c != 0 || !strings.HasPrefix(v, "selfcode ") {
		t.Fatalf("version: %q", v)
	}
}

// serve with only a webhook secret (no App credentials) takes deliveries and
// keeps the jobs stored and queued until it is given credentials.
func TestServeWithoutAppCredentialsHoldsJobs(t *testing.T) {
	data := t.TempDir()
	p := launch(t, []string{"serve"}, append(dockerEnv(),
		"PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"),
		"SELFCODE_WEBHOOK_SECRET="+testSecret, "SELFCODE_DATA_DIR="+data,
		"SELFCODE_ADDR=127.0.0.1:0", "SELFCODE_ADMIN_ADDR=127.0.0.1:0"), "")
	code, out, err := p.deliver("issue_comment", "nocreds-1", commandPayload(t, 3, "/selfcode go"))
	if err != nil || code != http.StatusAccepted || out["status"] != "queued" {
		t.Fatalf("delivery: %d %v %v", code, out, err)
	}
	if !strings.Contains(p.logText(), "jobs are stored but not run") {
		t.Fatalf("no warning about the missing credentials:\n%s", p.logText())
	}
	// Watch the job over three of the workers' 1 s ticks: it stays queued
	// (a worker without the hold would lease it within one).
	end := time.Now().Add(3 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(end) {
		jobs := p.allJobs(t)
		if len(jobs) != 1 || jobs[0].State != "queued" {
			t.Fatalf("jobs %+v", jobs)
		}
		<-tick.C
	}
	resp, err := http.Get("http://" + p.addr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
}
