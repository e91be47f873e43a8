package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/internal/dockertest"
)

func TestImageBuildUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"image", "build", "--offline", "--registry"},
		{"image", "build", "--build-arg", "NOEQUALS"},
		{"image", "build", "--image", "not a reference"},
	} {
		out, code := runCLI(t, []string{"DOCKER_HOST=tcp://127.0.0.1:1"}, args...)
		if code == 0 || (code != 2 && !strings.Contains(out, "not a reference")) {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
}

// `selfcode image build` on a released image's reference pulls it, saying
// so; `selfcode run` does the same before its job when the image is missing.
func TestImageBuildAndRunPutTheImageOnTheEngine(t *testing.T) {
	dockertest.NeedImage(t)
	ref := dockertest.RegistryImage(t)

	out, code := runCLI(t, dockerEnv(), "image", "build", "--image", ref)
	if code != 0 || !strings.Contains(out, "pulling it, because "+ref+" names a registry") || !strings.Contains(out, ref+": pull (sha256:") {
		t.Fatalf("image build: exit %d\n%s", code, out)
	}
	if err := exec.Command("docker", "image", "rm", ref).Run(); err != nil {
		t.Fatal(err)
	}

	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	os.WriteFile(repo+"/README", []byte("x\n"), 0o644)
	env := append(dockerEnv(), "SELFCODE_SANDBOX_IMAGE="+ref, "SELFCODE_DATA_DIR="+t.TempDir(), "SELFCODE_LLM_BASE_URL=http://127.0.0.1:1/v1")
	out, _ = runCLI(t, env, "run", "--repo", repo, "--task", "anything")
	if !strings.Contains(out, "==> sandbox image "+ref+": pulling it") || !dockertest.ImagePresent(ref) {
		t.Fatalf("run did not put the missing image on the engine:\n%s", out)
	}
}

// demo with the sandbox image missing puts it on the engine first and says
// which way and why: docker build from the Dockerfile when the engine can
// pull its base images (here a small image on a registry on 127.0.0.1,
// which has no Go, so the build stops at COPY --from=go: which path was
// taken is the point, the registry-path test in app/image builds it), and
// the offline build when it cannot (a one-second stand-in script), after
// which the demo goes on with the image.
func TestDemoBuildsAMissingSandboxImage(t *testing.T) {
	dockertest.NeedImage(t)
	host := dockertest.Registry(t, nil)
	pullable := host + "/selfcode-test-base-" + dockertest.Suffix() + ":1"
	dockertest.Push(t, pullable, nil)
	dockertest.RemoveImages(t, pullable) // the build pulls it
	unreachable := dockertest.UnreachableRegistry(t) + "/selfcode-test-base:1"
	recipe := dockertest.StandInRecipeDir(t)
	for _, tt := range []struct {
		name, base, decision string
		then                 []string
	}{
		{"docker build", pullable,
			"building it with docker build from deploy/sandbox/Dockerfile, because the engine has or can pull the Dockerfile's base images " + pullable,
			[]string{"Step 1/", "Pulling from selfcode-test-base-", " : COPY --from=go /usr/local/go /usr/local/go",
				"selfcode: sandbox image: docker build IMAGE: COPY failed"}},
		{"offline", unreachable,
			"building it offline with deploy/sandbox/build-offline.sh (debootstrap → docker import; a few minutes, needs root; nothing to do when it is built from this recipe), because the engine cannot pull the base image " + unreachable,
			[]string{"test offline build of IMAGE", "==> sandbox image IMAGE is ready", "==> simulated GitHub at "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			img := "selfcode-sandbox-test-" + dockertest.Suffix() + ":latest"
			dockertest.RemoveImages(t, img)
			env := append(dockerEnv(), "SELFCODE_SANDBOX_IMAGE="+img, "SELFCODE_DATA_DIR="+t.TempDir(),
				"SELFCODE_TEST_SANDBOX_RECIPE="+recipe, "SELFCODE_TEST_SANDBOX_BUILD_ARGS=BASE_IMAGE="+tt.base+" GO_IMAGE="+tt.base)
			out, _ := runCLI(t, env, "demo")
			dockertest.RemoveBuildLeftovers(t, func() string { return out })
			for _, want := range append([]string{"==> checking the sandbox image " + img, "==> sandbox image " + img + ": " + tt.decision}, tt.then...) {
				if want = strings.ReplaceAll(want, "IMAGE", img); !strings.Contains(out, want) {
					t.Errorf("demo's output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// `selfcode image ensure`, which make sandbox-image runs, asks the engine
// through the same client as every command: one that does not answer is an
// error, or, with --if-reachable (make test without SELFCODE_REQUIRE_DOCKER),
// said and no error.
func TestImageEnsureWithoutAnEngine(t *testing.T) {
	t.Parallel()
	env := []string{"DOCKER_HOST=tcp://127.0.0.1:1"}
	out, code := runCLI(t, env, "image", "ensure", "--if-reachable")
	if code != 0 || !strings.Contains(out, "Docker not reachable (the Docker engine is not reachable at tcp://127.0.0.1:1") {
		t.Errorf("--if-reachable: exit %d\n%s", code, out)
	}
	out, code = runCLI(t, env, "image", "ensure")
	if code != 1 || !strings.Contains(out, "the Docker engine is not reachable at tcp://127.0.0.1:1") {
		t.Errorf("without --if-reachable: exit %d\n%s", code, out)
	}
}

// A missing image is built with docker build when the engine can pull the
// Dockerfile's base images, as root or not: the offline build (sudo,
// debootstrap) is for when it cannot. The base here is a small image on a
// registry on 127.0.0.1 without Go, so the build stops at COPY --from=go:
// the path taken is the point.
func TestImageEnsureTakesTheRegistryPathWhenItCan(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	base := dockertest.Registry(t, nil) + "/selfcode-test-base-" + dockertest.Suffix() + ":1"
	dockertest.Push(t, base, nil)
	dockertest.RemoveImages(t, base)
	img := "selfcode-sandbox-test-" + dockertest.Suffix() + ":latest"
	dockertest.RemoveImages(t, img)
	env := append(dockerEnv(), "SELFCODE_TEST_SANDBOX_RECIPE="+dockertest.StandInRecipeDir(t),
		"SELFCODE_TEST_SANDBOX_BUILD_ARGS=BASE_IMAGE="+base+" GO_IMAGE="+base)
	out, code := runCLI(t, env, "image", "ensure", "--image", img)
	dockertest.RemoveBuildLeftovers(t, func() string { return out })
	for _, want := range []string{"==> sandbox image " + img + " is not on the engine",
		"==> sandbox image " + img + ": building it with docker build from deploy/sandbox/Dockerfile, because the engine has or can pull the Dockerfile's base images " + base,
		"COPY --from=go /usr/local/go /usr/local/go"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || strings.Contains(out, "offline") {
		t.Errorf("exit %d (want 1: the base has no Go), and no offline build:\n%s", code, out)
	}
}
