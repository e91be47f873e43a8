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
	host := dockertest.Registry(t, nil)
	ref := host + "/selfcode-sandbox-test-" + dockertest.Suffix() + ":v1"
	dockertest.Push(t, ref, nil)
	dockertest.RemoveImages(t, ref)

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
