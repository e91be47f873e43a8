package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/poll"
)

// serve (BuildImage) takes deliveries at once and puts the missing sandbox
// image on the engine in the background — here a released image pulled
// from a registry on 127.0.0.1 that answers only when the test lets it —
// while jobs wait; they may start once the image is there.
func TestServeBuildsAMissingImageWhileJobsWait(t *testing.T) {
	dockertest.NeedImage(t)
	release, pulling := make(chan struct{}), make(chan struct{}, 1)
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	host := dockertest.Registry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") {
				select {
				case pulling <- struct{}{}:
				default:
				}
				<-release // the engine's pull waits here
			}
			h.ServeHTTP(w, r)
		})
	})
	t.Cleanup(let) // before the registry closes, which waits for its requests
	ref := host + "/selfcode-sandbox-test-" + dockertest.Suffix() + ":v1"
	dockertest.Push(t, ref, nil)
	dockertest.RemoveImages(t, ref)

	cfg, err := config.Load(config.LoadOptions{Environ: []string{
		"SELFCODE_WEBHOOK_SECRET=s", "SELFCODE_DATA_DIR=" + t.TempDir(), "SELFCODE_ADDR=127.0.0.1:0",
		"SELFCODE_ADMIN_ADDR=127.0.0.1:0", "SELFCODE_SANDBOX_IMAGE=" + ref,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := New(ctx, Options{Config: cfg, Logger: slog.New(slog.DiscardHandler), BuildImage: true})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	defer func() { let(); stop(); <-done }()

	select {
	case <-pulling:
	case <-time.After(time.Minute):
		t.Fatal("the engine never asked the registry for the image")
	}
	resp, err := http.Get("http://" + srv.PublicAddr() + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz while building: %v %v", resp, err)
	}
	resp.Body.Close()
	if srv.jobsMayStart() {
		t.Fatal("jobs may start while the image is being pulled")
	}
	let()
	poll.Until(t, "jobs to be allowed", time.Minute, srv.jobsMayStart)
	if !dockertest.ImagePresent(ref) {
		t.Fatal("no image after the build")
	}
	srv.SetEnabled(false)
	if srv.jobsMayStart() {
		t.Fatal("the kill switch no longer holds jobs")
	}
}
