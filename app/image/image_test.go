package image

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/selfcode/selfcode/internal/dockertest"
)

// The tests below run the real paths against the real engine: the engine
// pulls from a registry this test serves on 127.0.0.1 (go-containerregistry's
// pkg/registry; the engine trusts 127.0.0.0/8 without TLS), builds
// testdata/recipe/Dockerfile (the sandbox Dockerfile's shape on a small base
// derived from the offline sandbox image) with the classic builder, or runs
// testdata/recipe/build-offline.sh (a one-second stand-in for debootstrap).
// Every image gets a name of its own and is removed at the end.

// derivedBase is a few-megabyte base taken from the offline sandbox image:
// dash and the libraries it loads, /bin/sh and /tmp.
func derivedBase(t *testing.T) []v1.Layer {
	t.Helper()
	rootfs := dockertest.TinyRootFS(t)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(rootfs)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return []v1.Layer{l}
}

// pushBase pushes the derived base to ref.
func pushBase(t *testing.T, ref string) {
	t.Helper()
	dockertest.Push(t, ref, []string{"PATH=/usr/local/go/bin:/usr/bin:/bin"}, derivedBase(t)...)
}

func label(t *testing.T, ref, key string) string {
	t.Helper()
	out, err := exec.Command("docker", "image", "inspect", "--format", `{{index .Config.Labels "`+key+`"}}`, ref).Output()
	if err != nil {
		t.Fatalf("inspect %s: %v", ref, err)
	}
	return strings.TrimSpace(string(out))
}

// testOptions builds into a fresh tag from testdata/recipe, with progress
// and the decision log captured.
func testOptions(t *testing.T) (Options, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var progress, logs bytes.Buffer
	tag := "selfcode-sandbox-test-" + dockertest.Suffix() + ":latest"
	dockertest.RemoveImages(t, tag)
	return Options{
		Image:    tag,
		Recipe:   os.DirFS("testdata/recipe"),
		Progress: &progress,
		Logger:   slog.New(slog.NewJSONHandler(&logs, nil)),
	}, &progress, &logs
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// The registry path: the engine can pull the Dockerfile's base, so the
// image is built with docker build, the bases coming from the registry.
func TestEnsureBuildsFromTheDockerfileWhenTheBaseCanBePulled(t *testing.T) {
	t.Parallel()
	host := dockertest.Registry(t, nil)
	base := host + "/selfcode-test-base-" + dockertest.Suffix() + ":1"
	pushBase(t, base)
	dockertest.RemoveImages(t, base)
	o, progress, logs := testOptions(t)
	o.BuildArgs = map[string]string{"BASE_IMAGE": base}

	res, err := Ensure(ctxFor(t), o)
	if err != nil {
		t.Fatalf("Ensure: %v\n%s", err, progress)
	}
	if res.Path != PathRegistry || !strings.Contains(res.Reason, "has or can pull the Dockerfile's base images "+base) || res.ID == "" {
		t.Fatalf("result %+v", res)
	}
	for _, want := range []string{"building it with docker build from deploy/sandbox/Dockerfile, because the engine has or can pull", "Step 1/", "Pulling from selfcode-test-base", "is ready"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
	}
	if !strings.Contains(logs.String(), `"path":"registry"`) {
		t.Errorf("decision not logged: %s", logs)
	}
	recipe, err := recipeHash(o.Recipe)
	if err != nil {
		t.Fatal(err)
	}
	if got := label(t, o.Image, "io.selfcode.recipe"); got != recipe {
		t.Errorf("recipe label %q, want %q", got, recipe)
	}
	if got := label(t, o.Image, "io.selfcode.cache"); got != "/cache" {
		t.Errorf("cache label %q", got)
	}
	// warm.sh ran in the build, with the recipe passed in.
	out, err := exec.Command("docker", "run", "--rm", "--network", "none", o.Image, "/bin/sh", "-c",
		"read a </cache/warmed; read b </etc/selfcode-sandbox-release; echo $a $b").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "warmed recipe="+recipe {
		t.Fatalf("in the image: %q, %v", out, err)
	}
	// Present now: nothing more is done.
	again, err := Ensure(ctxFor(t), o)
	if err != nil || again.Path != PathPresent || again.ID != res.ID {
		t.Fatalf("second Ensure: %+v, %v", again, err)
	}
}

// The fallback: the registry holding the base is gone, so the offline
// script builds the image, and the output says why.
func TestEnsureBuildsOfflineWhenTheBaseCannotBePulled(t *testing.T) {
	t.Parallel()
	base := dockertest.UnreachableRegistry(t) + "/selfcode-test-base:1"
	o, progress, logs := testOptions(t)
	o.BuildArgs = map[string]string{"BASE_IMAGE": base}

	res, err := Ensure(ctxFor(t), o)
	if err != nil {
		t.Fatalf("Ensure: %v\n%s", err, progress)
	}
	if res.Path != PathOffline || !strings.Contains(res.Reason, "the engine cannot pull the base image "+base) {
		t.Fatalf("result %+v", res)
	}
	for _, want := range []string{"building it offline with deploy/sandbox/build-offline.sh", "because the engine cannot pull the base image " + base,
		"test offline build of " + o.Image} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
	}
	if !strings.Contains(logs.String(), `"path":"offline"`) || !dockertest.ImagePresent(o.Image) || label(t, o.Image, "io.selfcode.cache") != "/cache" {
		t.Fatalf("no offline image (logs %s)", logs)
	}
}

// --registry never falls back: it says which base cannot be pulled.
func TestRegistryModeFailsWhenTheBaseCannotBePulled(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	base := dockertest.UnreachableRegistry(t) + "/selfcode-test-base:1"
	o, progress, _ := testOptions(t)
	o.Mode, o.BuildArgs = ModeRegistry, map[string]string{"BASE_IMAGE": base}
	_, err := Build(ctxFor(t), o)
	if !errors.Is(err, ErrCannotBuild) || !strings.Contains(err.Error(), base) {
		t.Fatalf("err %v", err)
	}
	if dockertest.ImagePresent(o.Image) || strings.Contains(progress.String(), "offline") {
		t.Fatalf("built anyway:\n%s", progress)
	}
}

// --offline takes the offline path even when a registry is there.
func TestOfflineModeSkipsTheRegistry(t *testing.T) {
	t.Parallel()
	host := dockertest.Registry(t, nil)
	base := host + "/selfcode-test-base-" + dockertest.Suffix() + ":1"
	pushBase(t, base)
	o, progress, _ := testOptions(t)
	o.Mode, o.BuildArgs = ModeOffline, map[string]string{"BASE_IMAGE": base}
	res, err := Build(ctxFor(t), o)
	if err != nil || res.Path != PathOffline || res.Reason != "--offline" {
		t.Fatalf("Build: %+v, %v\n%s", res, err, progress)
	}
	if dockertest.ImagePresent(base) {
		t.Error("the base was pulled")
	}
}

// A reference naming a registry (a released image) is pulled, not built.
func TestEnsurePullsAnImageThatNamesARegistry(t *testing.T) {
	t.Parallel()
	host := dockertest.Registry(t, nil)
	ref := host + "/selfcode-sandbox-test-" + dockertest.Suffix() + ":v1"
	pushBase(t, ref)
	dockertest.RemoveImages(t, ref)
	var progress bytes.Buffer
	res, err := Ensure(ctxFor(t), Options{Image: ref, Recipe: os.DirFS("testdata/recipe"), Progress: &progress})
	if err != nil || res.Path != PathPull || !dockertest.ImagePresent(ref) {
		t.Fatalf("Ensure: %+v, %v\n%s", res, err, &progress)
	}
	if !strings.Contains(progress.String(), "pulling it, because "+ref+" names a registry") {
		t.Errorf("progress:\n%s", &progress)
	}
}

// A pinned digest that cannot be pulled cannot be built either.
func TestEnsureFailsOnAnUnreachableDigest(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	ref := dockertest.UnreachableRegistry(t) + "/selfcode-sandbox@sha256:" + strings.Repeat("ab", 32)
	_, err := Ensure(ctxFor(t), Options{Image: ref, Recipe: os.DirFS("testdata/recipe")})
	if err == nil || !strings.Contains(err.Error(), "pull "+ref) {
		t.Fatalf("err %v", err)
	}
}
