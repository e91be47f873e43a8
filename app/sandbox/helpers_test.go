package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"github.com/selfcode/selfcode/internal/poll"
)

// Environment variables of the tests.
const (
	// requireDockerEnv = "1" turns a missing engine or image into a failure.
	requireDockerEnv = "SELFCODE_REQUIRE_DOCKER"
	// imageEnv names the image under test (default DefaultImage).
	imageEnv = "SELFCODE_SANDBOX_IMAGE"
	// helperEnv makes the test binary act as the orphan-holding helper.
	helperEnv = "SANDBOX_TEST_HOLD_INSTANCE"
)

func TestMain(m *testing.M) {
	if inst := os.Getenv(helperEnv); inst != "" {
		os.Exit(holdContainer(inst))
	}
	os.Exit(m.Run())
}

// holdContainer starts a container for instance, prints its ID and waits to
// be killed (giving up by itself after two minutes).
func holdContainer(instance string) int {
	ctx := context.Background()
	m, err := New(ctx, Options{Instance: instance, Image: testImage(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: new:", err)
		return 2
	}
	c, err := m.Start(ctx, Spec{JobID: "orphan", Deadline: time.Now().Add(10 * time.Minute)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: start:", err)
		return 2
	}
	fmt.Println(c.ID())
	<-time.After(2 * time.Minute)
	return 1
}

func testImage() string {
	if img := os.Getenv(imageEnv); img != "" {
		return img
	}
	return DefaultImage
}

// dockerClient returns a client for assertions, or skips (fails when
// SELFCODE_REQUIRE_DOCKER=1) when the engine or the image is missing.
func dockerClient(t testing.TB) *client.Client {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv(requireDockerEnv) == "1" {
			t.Fatalf("%s (%s=1)", msg, requireDockerEnv)
		}
		t.Skipf("%s; set %s=1 to make this a failure", msg, requireDockerEnv)
	}
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		unavailable("docker client: %v", err)
	}
	t.Cleanup(func() { api.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := api.Ping(ctx); err != nil {
		unavailable("docker engine unreachable: %v", err)
	}
	if _, err := api.ImageInspect(ctx, testImage()); err != nil {
		unavailable("image %s missing (build it with deploy/sandbox/build-offline.sh): %v", testImage(), err)
	}
	return api
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newManager returns a Manager with a fresh instance name.
func newManager(t testing.TB, lim Limits) (*Manager, *client.Client) {
	t.Helper()
	api := dockerClient(t)
	m, err := New(context.Background(), Options{
		Instance: "test-" + randomHex(4), Image: testImage(), Limits: lim, Logger: testLogger(t),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m, api
}

// start starts a container that is closed when the test ends.
func start(t testing.TB, m *Manager, spec Spec) *Container {
	t.Helper()
	if spec.JobID == "" {
		spec.JobID = "job-" + randomHex(3)
	}
	c, err := m.Start(context.Background(), spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// mustExec runs cmd and fails the test on an infrastructure error.
func mustExec(t testing.TB, c *Container, cmd Cmd) Result {
	t.Helper()
	res, err := c.Exec(context.Background(), cmd)
	if err != nil {
		t.Fatalf("Exec(%q): %v", cmd.Run, err)
	}
	return res
}

// waitGone polls until the engine no longer knows the container, failing
// after within.
func waitGone(t testing.TB, api *client.Client, id string, within time.Duration) {
	t.Helper()
	poll.Until(t, "container "+shortID(id)+" to be removed", within, func() bool {
		_, err := api.ContainerInspect(context.Background(), id)
		if err != nil && !errdefs.IsNotFound(err) {
			t.Fatalf("inspect %s: %v", shortID(id), err)
		}
		return errdefs.IsNotFound(err)
	})
}

// volumeExists reports whether the named volume exists.
func volumeExists(t testing.TB, api *client.Client, name string) bool {
	t.Helper()
	_, err := api.VolumeInspect(context.Background(), name)
	if errdefs.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("inspect volume: %v", err)
	}
	return true
}

// isGone reports whether err says the container is gone.
func isGone(err error) bool { return errors.Is(err, ErrContainerGone) }
