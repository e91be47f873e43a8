package server_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/server"
	"github.com/selfcode/selfcode/internal/dockertest"
)

func TestReadinessFollowsDocker(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := config.Load(config.LoadOptions{Environ: []string{"SELFCODE_SANDBOX_IMAGE=" + dockertest.Image()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("engine reachable", func(t *testing.T) {
		dockertest.Manager(t) // skips without Docker (fails under CI)
		m, ready, err := server.Sandbox(ctx, cfg, "ready-test", quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if ready.Name != "docker" || ready.Check(ctx) != nil {
			t.Fatalf("readiness %q: %v", ready.Name, ready.Check(ctx))
		}
	})
	t.Run("engine unreachable", func(t *testing.T) {
		// A loopback port nothing listens on.
		t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
		m, ready, err := server.Sandbox(ctx, cfg, "ready-test-down", quiet)
		if err != nil {
			t.Fatal(err) // the server still starts; readiness reports the engine
		}
		defer m.Close()
		if ready.Check(ctx) == nil {
			t.Fatal("readiness passed with no Docker engine")
		}
	})
}
