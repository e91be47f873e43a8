package dockertest

import (
	"embed"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/selfcode/selfcode/deploy"
)

//go:embed standin/build-offline.sh
var standIn embed.FS

// StandInRecipe is the sandbox image's recipe as the binary carries it (the
// real Dockerfile, whose base images decide between the registry and the
// offline path, and warm.sh) with build-offline.sh replaced by a stand-in
// that takes the same arguments, prints a progress line and imports a
// one-file image with the cache label in a second instead of running
// debootstrap for minutes: for tests of which path is taken and what is
// said about it.
func StandInRecipe(t testing.TB) fs.FS {
	t.Helper()
	script, err := fs.Sub(standIn, "standin")
	if err != nil {
		t.Fatal(err)
	}
	recipe := fstest.MapFS{}
	for name, from := range map[string]fs.FS{"Dockerfile": deploy.SandboxContext(), "warm.sh": deploy.SandboxContext(), "build-offline.sh": script} {
		data, err := fs.ReadFile(from, name)
		if err != nil {
			t.Fatal(err)
		}
		recipe[name] = &fstest.MapFile{Data: data, Mode: 0o755}
	}
	return recipe
}

// StandInRecipeDir writes StandInRecipe to a directory of the test's own,
// for a selfcode process to read.
func StandInRecipeDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	recipe := StandInRecipe(t)
	names, err := fs.Glob(recipe, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		data, err := fs.ReadFile(recipe, name)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// RemoveBuildLeftovers removes, when the test ends, the images a failed
// classic docker build left behind (the " ---> <id>" lines of its output):
// untagged ones only, newest first, so a base image or anything named stays.
// After a build that worked they are the new image's parents, which go with
// it.
func RemoveBuildLeftovers(t testing.TB, output func() string) {
	t.Cleanup(func() {
		ids := stepImage.FindAllStringSubmatch(output(), -1)
		for i := len(ids) - 1; i >= 0; i-- {
			out, err := exec.Command("docker", "image", "inspect", "--format", "{{len .RepoTags}}", ids[i][1]).Output()
			if err == nil && strings.TrimSpace(string(out)) == "0" {
				_ = exec.Command("docker", "image", "rm", ids[i][1]).Run()
			}
		}
	})
}

var stepImage = regexp.MustCompile(`(?m)^ ---> ([0-9a-f]{12})$`)
