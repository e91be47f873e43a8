package dockertest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry serves an empty image registry (go-containerregistry's
// pkg/registry, in this process) on 127.0.0.1 until the test ends and
// returns its host:port. The engine pulls from it without TLS: it trusts
// 127.0.0.0/8 as an insecure registry. wrap, when set, wraps the handler
// (to hold or count requests).
func Registry(t testing.TB, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// UnreachableRegistry is the host:port of a registry that has gone away.
func UnreachableRegistry(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	return host
}

// Push pushes an image made of layers (a small random one when none are
// given) for this machine's platform to ref, a reference into Registry.
func Push(t testing.TB, ref string, env []string, layers ...v1.Layer) {
	t.Helper()
	img := empty.Image
	if len(layers) == 0 {
		r, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		img = r
	} else {
		var err error
		if img, err = mutate.AppendLayers(img, layers...); err != nil {
			t.Fatal(err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Env = env
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// RemoveImages removes the test's own images from the engine when it
// ends (never any other).
func RemoveImages(t testing.TB, refs ...string) {
	t.Cleanup(func() {
		for _, ref := range refs {
			_ = exec.Command("docker", "image", "rm", "--force", ref).Run()
		}
	})
}

// ImagePresent reports whether the engine has ref.
func ImagePresent(ref string) bool {
	return exec.Command("docker", "image", "inspect", ref).Run() == nil
}
