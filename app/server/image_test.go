package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/image"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/poll"
)

// serveBuilding runs a server that builds the missing sandbox image img
// with the build options o (BuildImage, as serve does) and returns it, a
// function that stops it and returns its log, one JSON record a line.
func serveBuilding(t *testing.T, img string, o image.Options) (*Server, func() string) {
	t.Helper()
	cfg, err := config.Load(config.LoadOptions{Environ: []string{
		"SELFCODE_WEBHOOK_SECRET=s", "SELFCODE_DATA_DIR=" + t.TempDir(), "SELFCODE_ADDR=127.0.0.1:0",
		"SELFCODE_ADMIN_ADDR=127.0.0.1:0", "SELFCODE_SANDBOX_IMAGE=" + img,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	// The handler writes each record at once, under its own lock; the log
	// is read only once the server has stopped.
	var logs bytes.Buffer
	srv, err := New(ctx, Options{Config: cfg, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), BuildImage: true, Image: o})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	var once sync.Once
	end := func() string {
		once.Do(func() { stop(); <-done })
		return logs.String()
	}
	t.Cleanup(func() { end() })
	return srv, end
}

// logRecord finds the first log record with message msg.
func logRecord(t *testing.T, logs, msg string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			return rec
		}
	}
	t.Fatalf("no %q in the log:\n%s", msg, logs)
	return nil
}

// expectImageLog checks that serve's log says, before the build and when
// it is done, which path it took and why.
func expectImageLog(t *testing.T, logs, how, path, reason string) {
	t.Helper()
	for _, msg := range []string{"sandbox image: " + how, "sandbox image ready"} {
		rec := logRecord(t, logs, msg)
		if rec["path"] != path || !strings.HasPrefix(fmt.Sprint(rec["reason"]), reason) {
			t.Errorf("%q says path %v, reason %q; want %s, %q…", msg, rec["path"], rec["reason"], path, reason)
		}
	}
}

// serve (BuildImage) takes deliveries at once and puts the missing sandbox
// image on the engine in the background — here a released image pulled
// from a registry on 127.0.0.1 that answers only when the test lets it —
// while jobs wait; they may start once the image is there. Its log says
// that the image was pulled and why.
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
	ref := host + "/selfcode-sandbox-test-" + dockertest.Suffix() + ":v1"
	dockertest.Push(t, ref, nil)
	dockertest.RemoveImages(t, ref)

	srv, stop := serveBuilding(t, ref, image.Options{})
	t.Cleanup(let) // before the server stops (it waits for the build) and the registry closes (it waits for its requests)
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
	expectImageLog(t, stop(), "pulling it", "pull", ref+" names a registry")
}

// When the engine cannot pull the Dockerfile's base images, serve builds
// the image offline (here the stand-in script) and its log says so and
// why, the script's lines included.
func TestServeBuildsAMissingImageOffline(t *testing.T) {
	dockertest.NeedImage(t)
	img := "selfcode-sandbox-test-" + dockertest.Suffix() + ":latest"
	dockertest.RemoveImages(t, img)
	base := dockertest.UnreachableRegistry(t) + "/selfcode-test-base:1"
	srv, stop := serveBuilding(t, img, image.Options{Recipe: dockertest.StandInRecipe(t),
		BuildArgs: map[string]string{"BASE_IMAGE": base, "GO_IMAGE": base}})
	poll.Until(t, "jobs to be allowed", time.Minute, srv.jobsMayStart)
	logs := stop()
	expectImageLog(t, logs, "building it offline with deploy/sandbox/build-offline.sh (debootstrap → docker import; a few minutes, needs root; nothing to do when it is built from this recipe)",
		"offline", "the engine cannot pull the base image "+base)
	if !strings.Contains(logs, `"msg":"sandbox image build","line":"[sandbox-image   0s] test offline build of `+img+`"`) || !dockertest.ImagePresent(img) {
		t.Errorf("the offline build did not run, or its lines are not in the log:\n%s", logs)
	}
}

// Behind a socket proxy that refuses pulls and builds (Compose's default),
// serve cannot build the missing image; its log says so and how to get
// the image there instead, and jobs are let go to fail with that error.
func TestServeSaysHowToGetTheImageBehindASocketProxy(t *testing.T) {
	dockertest.NeedImage(t)
	t.Setenv("DOCKER_HOST", dockertest.SocketProxy(t, "distribution", "build"))
	img := "selfcode-sandbox-test-" + dockertest.Suffix() + ":latest"
	srv, stop := serveBuilding(t, img, image.Options{})
	poll.Until(t, "jobs to be allowed", time.Minute, srv.jobsMayStart)
	logs := stop()
	rec := logRecord(t, logs, "sandbox image build refused by the Docker engine; jobs will fail until the image is there")
	fix := fmt.Sprint(rec["fix"])
	for _, want := range []string{"socket proxy that allows no pulls or builds", "on the engine's host run `selfcode image build` (SELFCODE_SANDBOX_IMAGE=" + img + ")",
		"set SELFCODE_SANDBOX_IMAGE to a released sandbox image (ghcr.io/selfcode/selfcode-sandbox:<version>), which serve pulls through the proxy"} {
		if !strings.Contains(fix, want) {
			t.Errorf("the fix %q lacks %q", fix, want)
		}
	}
	if strings.Contains(logs, "building it offline") || dockertest.ImagePresent(img) {
		t.Errorf("serve tried the offline build behind the proxy:\n%s", logs)
	}
}
