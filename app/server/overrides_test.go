package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/internal/e2e"
	"github.com/selfcode/selfcode/internal/fakegithub"
)

// SELFCODE_PROMPTS_DIR and SELFCODE_TEMPLATES_DIR reach the prompts and the
// report templates; a folder that is not there stops startup, naming it.
func TestOverrideDirectories(t *testing.T) {
	t.Parallel()
	fake, err := fakegithub.New(fakegithub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	dir := t.TempDir()
	key := filepath.Join(dir, "app.pem")
	os.WriteFile(key, fake.PrivateKeyPEM(), 0o600)
	load := func(extra ...string) *config.Config {
		cfg, err := config.Load(config.LoadOptions{Environ: append([]string{
			"SELFCODE_WEBHOOK_SECRET=x", "SELFCODE_DATA_DIR=" + filepath.Join(dir, "data"),
			fmt.Sprint("SELFCODE_APP_ID=", fake.AppID()), "SELFCODE_PRIVATE_KEY_PATH=" + key, "SELFCODE_GITHUB_API_URL=" + fake.URL(),
		}, extra...)})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	missing := filepath.Join(dir, "missing")

	if _, err := server.Pipeline(server.PipelineOptions{Config: load("SELFCODE_PROMPTS_DIR=" + missing)}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("prompts dir that is not there: %v", err)
	}
	good := t.TempDir()
	os.WriteFile(filepath.Join(good, "nudge.tmpl"), []byte("custom nudge"), 0o600)
	if _, err := server.Pipeline(server.PipelineOptions{Config: load("SELFCODE_PROMPTS_DIR=" + good)}); err != nil {
		t.Errorf("prompts override: %v", err)
	}

	cfg := load("SELFCODE_TEMPLATES_DIR="+missing, "SELFCODE_ADDR=127.0.0.1:0", "SELFCODE_ADMIN_ADDR=127.0.0.1:0")
	if srv, err := server.New(context.Background(), server.Options{Config: cfg, Pipeline: e2e.NewScripted()}); err == nil || !strings.Contains(err.Error(), missing) {
		if srv != nil {
			srv.Run(canceled())
		}
		t.Errorf("templates dir that is not there: %v", err)
	}
}

// canceled is a context that is already done (Run then shuts down at once).
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
