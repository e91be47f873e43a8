package image

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/deploy"
	"github.com/selfcode/selfcode/internal/dockertest"
)

// recipeLabelsOf is what an image built from o's recipe is labelled: the
// Dockerfile build's label, then the offline build's.
func recipeLabelsOf(t *testing.T, o Options) (docker, offline string) {
	t.Helper()
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	labels, err := b.recipeLabels(context.Background())
	if err != nil || len(labels) != 2 {
		t.Fatalf("recipe labels %q, %v (is there a Go toolchain?)", labels, err)
	}
	return labels[0], labels[1]
}

// An image on the engine built from this recipe, by either build, is left
// as it is: no path is probed, no script runs (the stand-in would build
// over it), whatever the machine (the offline build needs Linux, which is
// not asked).
func TestEnsureCurrentLeavesACurrentImage(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	o, _, _ := testOptions(t)
	docker, offline := recipeLabelsOf(t, o)
	for _, label := range []string{docker, offline} {
		t.Run(label, func(t *testing.T) {
			t.Parallel()
			o, progress, logs := testOptions(t)
			o.BuildArgs = map[string]string{"BASE_IMAGE": dockertest.UnreachableRegistry(t) + "/selfcode-test-base:1"}
			id := dockertest.ImportLabelled(t, o.Image, map[string]string{RecipeLabel: label})
			res, err := EnsureCurrent(ctxFor(t), o)
			if err != nil || res.Path != PathPresent || res.ID != id || !strings.Contains(res.Reason, "built from this recipe ("+label+")") {
				t.Fatalf("EnsureCurrent: %+v, %v\n%s", res, err, progress)
			}
			if !strings.Contains(progress.String(), "nothing to do") || strings.Contains(progress.String(), "building it") ||
				strings.Contains(progress.String(), "test offline build") || !strings.Contains(logs.String(), `"path":"present"`) {
				t.Errorf("progress:\n%s\nlogs: %s", progress, logs)
			}
		})
	}
}

// An image built from another recipe is built again by the first path
// that works: here, with the bases unreachable, offline.
func TestEnsureCurrentRebuildsAStaleImage(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	o, progress, _ := testOptions(t)
	o.BuildArgs = map[string]string{"BASE_IMAGE": dockertest.UnreachableRegistry(t) + "/selfcode-test-base:1"}
	old := dockertest.ImportLabelled(t, o.Image, map[string]string{RecipeLabel: "dockerfile-0000000000000000"})
	res, err := EnsureCurrent(ctxFor(t), o)
	if err != nil || res.Path != PathOffline || res.ID == old {
		t.Fatalf("EnsureCurrent: %+v, %v\n%s", res, err, progress)
	}
	for _, want := range []string{`was built from recipe "dockerfile-0000000000000000", not from this one: rebuilding it`,
		"building it offline", "test offline build of " + o.Image} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
	}
}

// The offline label computed here is the one the real build-offline.sh
// computes: the script finds an image labelled with it current.
func TestOfflineRecipeIsTheScripts(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("build-offline.sh runs on Linux only")
	}
	dockertest.NeedImage(t)
	o, _, _ := testOptions(t)
	o.Recipe = deploy.SandboxContext()
	_, offline := recipeLabelsOf(t, o)
	id := dockertest.ImportLabelled(t, o.Image, map[string]string{RecipeLabel: offline})
	scriptFindsCurrent(t, o, id, offline)
}

// scriptFindsCurrent runs the real build-offline.sh (o.Recipe) on o.Image,
// the image id, and fails unless it finds it built from recipe and does
// nothing. Were it to rebuild, the mirror it would fetch from is a closed
// port.
func scriptFindsCurrent(t *testing.T, o Options, id, recipe string) {
	t.Helper()
	var progress bytes.Buffer
	o.Mode, o.Progress = ModeOffline, &progress
	o.Environ = append(os.Environ(), "SELFCODE_DEBIAN_MIRROR=http://"+dockertest.UnreachableRegistry(t)+"/debian")
	res, err := Build(ctxFor(t), o)
	if err != nil || res.Path != PathOffline || res.ID != id {
		t.Fatalf("Build --offline: %+v, %v\n%s", res, err, &progress)
	}
	if want := "is built from this recipe (" + recipe + "); nothing to do"; !strings.Contains(progress.String(), want) {
		t.Errorf("build-offline.sh did not find the image current (want %q):\n%s", want, &progress)
	}
}

// The offline script's docker CLI works on the engine the Go client does,
// whatever context the CLI would otherwise use.
func TestOfflineScriptUsesTheClientsEngine(t *testing.T) {
	t.Parallel()
	dockertest.NeedImage(t)
	o, progress, _ := testOptions(t)
	o.Mode = ModeOffline
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DOCKER_HOST=") && !strings.HasPrefix(kv, "DOCKER_CONTEXT=") {
			o.Environ = append(o.Environ, kv)
		}
	}
	o.Environ = append(o.Environ, "DOCKER_CONTEXT=selfcode-test-no-such-context")
	res, err := Build(ctxFor(t), o)
	if err != nil || res.Path != PathOffline || !dockertest.ImagePresent(o.Image) {
		t.Fatalf("Build --offline: %+v, %v\n%s", res, err, progress)
	}
}
