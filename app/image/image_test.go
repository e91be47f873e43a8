package image

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/deploy"
	"github.com/selfcode/selfcode/internal/dockertest"
)

// The tests below run the real paths against the real engine: the engine
// pulls from a registry this test serves on 127.0.0.1 (go-containerregistry's
// pkg/registry; the engine trusts 127.0.0.0/8 without TLS) and builds
// deploy/sandbox/Dockerfile with the classic builder, or runs the offline
// script: the real one, or a one-second stand-in for debootstrap
// (dockertest.StandInRecipe) where the test is about choosing the path.
// Every image gets a name of its own and is removed at the end; the sandbox
// image the tests start from is only read.

func label(t *testing.T, ref, key string) string {
	t.Helper()
	out, err := exec.Command("docker", "image", "inspect", "--format", `{{index .Config.Labels "`+key+`"}}`, ref).Output()
	if err != nil {
		t.Fatalf("inspect %s: %v", ref, err)
	}
	return strings.TrimSpace(string(out))
}

// testOptions builds into a fresh tag from the stand-in recipe, with
// progress and the decision log captured.
func testOptions(t *testing.T) (Options, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var progress, logs bytes.Buffer
	tag := "selfcode-sandbox-test-" + dockertest.Suffix() + ":latest"
	dockertest.RemoveImages(t, tag)
	return Options{
		Image:    tag,
		Recipe:   dockertest.StandInRecipe(t),
		Progress: &progress,
		Logger:   slog.New(slog.NewJSONHandler(&logs, nil)),
	}, &progress, &logs
}

func ctxFor(t *testing.T) context.Context { return ctxWithin(t, 5*time.Minute) }

// ctxWithin is a context that ends after d or with the test.
func ctxWithin(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// toolchainVersions is what each toolchain of image answers to --version
// (or its equivalent), one line each, in a container without network; it
// fails the test when one does not answer.
func toolchainVersions(t *testing.T, image string) string {
	t.Helper()
	script := `set -e
go version
python3 --version
python3 -m pytest --version 2>&1
node --version
npm --version
tsc --version
jest --version
mocha --version
git --version
make --version | head -n 1
gcc --version | head -n 1
grep -c '^sandbox:' /etc/passwd`
	out, err := exec.Command("docker", "run", "--rm", "--network", "none", image, "/bin/sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the toolchains of %s: %v\n%s", image, err, out)
	}
	if n := strings.Count(string(out), "\n"); n != 12 {
		t.Fatalf("the toolchains of %s answered %d lines, want 12:\n%s", image, n, out)
	}
	return string(out)
}

// The registry path, end to end: the offline sandbox image is pushed to a
// registry on this machine and serves as both base images of the real
// Dockerfile (BASE_IMAGE, GO_IMAGE), which Ensure builds with docker build.
// The result answers with the same toolchains, at the same versions, as
// the image it was built from. The offline build then keeps it: an image
// built from this recipe's Dockerfile is current for build-offline.sh too.
func TestEnsureBuildsTheSandboxDockerfileWhenTheBaseCanBePulled(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	host := dockertest.Registry(t, nil)
	base := host + "/selfcode-sandbox-base-" + dockertest.Suffix() + ":offline"
	start := time.Now()
	dockertest.PushFromEngine(t, dockertest.Image(), base)
	dockertest.Untag(t, base) // the build pulls it
	t.Logf("pushed %s to %s in %s", dockertest.Image(), base, time.Since(start).Round(time.Second))
	o, progress, logs := testOptions(t)
	dockertest.RemoveBuildLeftovers(t, progress.String)
	o.Recipe = deploy.SandboxContext()
	o.BuildArgs = map[string]string{"BASE_IMAGE": base, "GO_IMAGE": base}

	start = time.Now()
	// A whole image build: minutes on a loaded machine with a slow disk.
	res, err := Ensure(ctxWithin(t, 20*time.Minute), o)
	if err != nil {
		t.Fatalf("Ensure: %v\n%s", err, progress)
	}
	t.Logf("built %s from deploy/sandbox/Dockerfile in %s", o.Image, time.Since(start).Round(time.Second))
	if res.Path != PathRegistry || !strings.HasSuffix(res.Reason, "has or can pull the Dockerfile's base images "+base) || res.ID == "" {
		t.Fatalf("result %+v", res)
	}
	for _, want := range []string{"building it with docker build from deploy/sandbox/Dockerfile, because the engine has or can pull",
		"Step 1/", "Pulling from selfcode-sandbox-base-", "is ready"} {
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
	if got, want := toolchainVersions(t, o.Image), toolchainVersions(t, dockertest.Image()); got != want {
		t.Errorf("the toolchains differ from the offline image's:\n%s\nwant:\n%s", got, want)
	}
	out, err := exec.Command("docker", "run", "--rm", "--network", "none", o.Image, "/bin/sh", "-c",
		"grep '^recipe=' /etc/selfcode-sandbox-release; test -d /cache/go-build && echo warmed").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "recipe="+recipe+"\nwarmed" {
		t.Fatalf("in the image: %q, %v", out, err)
	}

	// Present now: nothing more is done.
	again, err := Ensure(ctxFor(t), o)
	if err != nil || again.Path != PathPresent || again.ID != res.ID {
		t.Fatalf("second Ensure: %+v, %v", again, err)
	}
	// The real build-offline.sh, run by Build, finds the image current.
	scriptFindsCurrent(t, o, res.ID, recipe)
}

// The fallback: the registry holding the Dockerfile's bases is gone, so
// the offline script builds the image, and the output says why.
func TestEnsureBuildsOfflineWhenTheBaseCannotBePulled(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	base := dockertest.UnreachableRegistry(t) + "/selfcode-test-base:1"
	o, progress, logs := testOptions(t)
	o.BuildArgs = map[string]string{"BASE_IMAGE": base, "GO_IMAGE": base}

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
	o.Mode, o.BuildArgs = ModeRegistry, map[string]string{"BASE_IMAGE": base, "GO_IMAGE": base}
	_, err := Build(ctxFor(t), o)
	if !errors.Is(err, ErrCannotBuild) || !strings.Contains(err.Error(), base) {
		t.Fatalf("err %v", err)
	}
	if dockertest.ImagePresent(o.Image) || strings.Contains(progress.String(), "offline") {
		t.Fatalf("built anyway:\n%s", progress)
	}
}

// Behind a socket proxy that refuses the distribution and build API
// sections (Compose's), the probe is refused: the build fails at once
// saying so, and the offline build, which would run behind the same proxy,
// is not tried. A released image, named by its registry, is still pulled.
func TestEnsureRefusedBehindASocketProxy(t *testing.T) {
	dockertest.NeedImage(t)
	released := dockertest.RegistryImage(t)
	t.Setenv("DOCKER_HOST", dockertest.SocketProxy(t, "distribution", "build"))
	if res, err := Ensure(ctxFor(t), Options{Image: released, Recipe: dockertest.StandInRecipe(t)}); err != nil || res.Path != PathPull {
		t.Fatalf("the released image through the proxy: %+v, %v", res, err)
	}

	base := dockertest.UnreachableRegistry(t) + "/selfcode-test-base:1"
	o, progress, _ := testOptions(t)
	o.BuildArgs = map[string]string{"BASE_IMAGE": base, "GO_IMAGE": base}
	_, err := Ensure(ctxFor(t), o)
	if !errors.Is(err, ErrRefused) || !errors.Is(err, ErrCannotBuild) || !strings.Contains(err.Error(), "asking whether it can pull the base image "+base) {
		t.Fatalf("err %v", err)
	}
	if dockertest.ImagePresent(o.Image) || strings.Contains(progress.String(), "offline") {
		t.Fatalf("built anyway:\n%s", progress)
	}
}

// --offline takes the offline path even when a registry is there.
func TestOfflineModeSkipsTheRegistry(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	host := dockertest.Registry(t, nil)
	base := host + "/selfcode-test-base-" + dockertest.Suffix() + ":1"
	dockertest.Push(t, base, nil)
	dockertest.RemoveImages(t, base)
	o, progress, _ := testOptions(t)
	o.Mode, o.BuildArgs = ModeOffline, map[string]string{"BASE_IMAGE": base, "GO_IMAGE": base}
	res, err := Build(ctxFor(t), o)
	if err != nil || res.Path != PathOffline || res.Reason != "--offline" {
		t.Fatalf("Build: %+v, %v\n%s", res, err, progress)
	}
	if dockertest.ImagePresent(base) {
		t.Error("the base was pulled")
	}
}

// A reference naming a registry (a released image) is pulled, not built:
// by tag, and by name:tag@digest, the form the release workflow gives the
// server image as its default sandbox image. The digest wins over the tag,
// which has moved on to another image since.
func TestEnsurePullsAnImageThatNamesARegistry(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	host := dockertest.Registry(t, nil)
	repo := host + "/selfcode-sandbox-test-" + dockertest.Suffix()
	pinned := dockertest.Push(t, repo+":v1", nil)
	moved := dockertest.Push(t, repo+":v1", nil)
	for _, tt := range []struct{ ref, digest string }{
		{repo + ":v1", moved},
		{repo + ":v1@" + pinned, pinned},
	} {
		t.Run(strings.TrimPrefix(tt.ref, repo), func(t *testing.T) {
			dockertest.RemoveImages(t, tt.ref)
			var progress bytes.Buffer
			res, err := Ensure(ctxFor(t), Options{Image: tt.ref, Recipe: dockertest.StandInRecipe(t), Progress: &progress})
			if err != nil || res.Path != PathPull || !dockertest.ImagePresent(tt.ref) {
				t.Fatalf("Ensure: %+v, %v\n%s", res, err, &progress)
			}
			if !strings.Contains(progress.String(), "pulling it, because "+tt.ref+" names a registry") {
				t.Errorf("progress:\n%s", &progress)
			}
			out, err := exec.Command("docker", "image", "inspect", "--format", "{{json .RepoDigests}}", res.ID).Output()
			if err != nil || !strings.Contains(string(out), `"`+repo+"@"+tt.digest+`"`) {
				t.Errorf("pulled %s, whose digests are %s (%v); want %s", res.ID, out, err, tt.digest)
			}
			again, err := Ensure(ctxFor(t), Options{Image: tt.ref, Recipe: dockertest.StandInRecipe(t)})
			if err != nil || again.Path != PathPresent || again.ID != res.ID {
				t.Fatalf("second Ensure: %+v, %v", again, err)
			}
		})
	}
}

// A pinned digest that cannot be pulled cannot be built either.
func TestEnsureFailsOnAnUnreachableDigest(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	ref := dockertest.UnreachableRegistry(t) + "/selfcode-sandbox@sha256:" + strings.Repeat("ab", 32)
	_, err := Ensure(ctxFor(t), Options{Image: ref, Recipe: dockertest.StandInRecipe(t)})
	if err == nil || !strings.Contains(err.Error(), "pull "+ref) {
		t.Fatalf("err %v", err)
	}
}
