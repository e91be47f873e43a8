package dockertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/selfcode/selfcode/app/sandbox"
)

// Image is the sandbox image tests use.
func Image() string {
	if v := os.Getenv("SELFCODE_SANDBOX_IMAGE"); v != "" {
		return v
	}
	return sandbox.DefaultImage
}

// Required reports whether Docker tests must run (CI).
func Required() bool { return os.Getenv("SELFCODE_REQUIRE_DOCKER") == "1" }

// Manager returns a sandbox manager with a per-test instance name, closed
// (and its containers reaped) when the test ends.
func Manager(t testing.TB) *sandbox.Manager {
	t.Helper()
	NeedImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A random suffix keeps concurrent test runs (several checkouts on one
	// engine) from reaping each other's containers; leftovers of a crashed
	// run are still reaped once their deadline passes.
	// Caches are on as in production: a repository's jobs share theirs
	// across tests and runs (capped), which is what keeps these tests fast.
	m, err := sandbox.New(ctx, sandbox.Options{Instance: "test-" + sanitize(t.Name()) + "-" + suffix(), Image: Image(),
		Cache: sandbox.CacheOptions{MaxBytes: TestCacheBytes}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ping(ctx); err != nil {
		if Required() {
			t.Fatalf("Docker engine: %v", err)
		}
		t.Skipf("Docker engine: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Reap(ctx)
		m.Close()
	})
	return m
}

// NeedImage skips the test (fails it under SELFCODE_REQUIRE_DOCKER=1) when
// the Docker engine or the sandbox image is not there.
func NeedImage(t testing.TB) {
	t.Helper()
	if err := exec.Command("docker", "image", "inspect", Image()).Run(); err != nil {
		if Required() {
			t.Fatalf("SELFCODE_REQUIRE_DOCKER=1 but the Docker engine or image %s is unavailable: %v", Image(), err)
		}
		t.Skipf("no Docker engine or image %s: %v", Image(), err)
	}
}

// Suffix is a random name part that keeps concurrent test runs' Docker
// objects apart.
func Suffix() string { return suffix() }

// TestCacheBytes caps the caches tests leave on the engine.
const TestCacheBytes = 6 << 30

// FreshRepo is a repository name no other test or run uses: its cache
// starts empty (from the image) and is removed when the test ends.
func FreshRepo(t testing.TB, m *sandbox.Manager, name string) string {
	repo := "test-" + suffix() + "/" + name
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _, _ = m.ClearCaches(ctx, repo)
	})
	return repo
}

func suffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) > 40 {
		b = b[len(b)-40:]
	}
	return string(b)
}

// Leftovers lists what a sandbox manager of instance left on the engine:
// containers and networks with its label, smoke images with its tag.
func Leftovers(t testing.TB, instance string) []string {
	t.Helper()
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	ctx := context.Background()
	f := filters.NewArgs(filters.Arg("label", sandbox.LabelInstance+"="+instance))
	var out []string
	cs, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		out = append(out, "container "+c.ID)
	}
	ns, err := api.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		out = append(out, "network "+n.Name)
	}
	is, err := api.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", sandbox.SmokeRepository+":"+instance+".*"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range is {
		out = append(out, "image "+i.ID)
	}
	return out
}

// ImagesGone fails for each of refs (tags or IDs) still on the engine.
func ImagesGone(t testing.TB, refs []string) {
	t.Helper()
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	for _, ref := range refs {
		if _, err := api.ImageInspect(context.Background(), ref); !errdefs.IsNotFound(err) {
			t.Errorf("image %s is still there (%v)", ref, err)
		}
	}
}
