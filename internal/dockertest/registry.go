package dockertest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/stream"
	"github.com/google/go-containerregistry/pkg/v1/types"
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
// given) for this machine's platform to ref, a reference into Registry, and
// returns its manifest's digest ("sha256:…").
func Push(t testing.TB, ref string, env []string, layers ...v1.Layer) string {
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
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// RegistryImage is a small image on a registry served for the test (as a
// released image is on ghcr.io): the reference names the registry, the
// image is not on the engine, and whatever pulls it is removed at the end.
func RegistryImage(t testing.TB) string {
	t.Helper()
	ref := Registry(t, nil) + "/selfcode-sandbox-test-" + Suffix() + ":v1"
	Push(t, ref, nil)
	RemoveImages(t, ref)
	return ref
}

// PushFromEngine pushes the engine's image src to ref, a reference into
// Registry, as `docker image save` streams it: each layer as a gzip stream
// that stores without compressing (docker push compresses a gigabyte at
// one core's pace, a minute and more of the test), and the image's
// configuration byte for byte. So the manifest's config digest is src's
// image ID, and a pull of ref on this engine finds the image already there
// and copies nothing. src keeps its names; ref is never a name on the
// engine.
func PushFromEngine(t testing.TB, src, ref string) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("docker", "image", "save", src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("docker image save %s: %v", src, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Big files are layers, pushed as they stream past; the small ones
	// (manifest.json, the configuration, small layers) are kept until
	// manifest.json, wherever it comes, says which is which.
	pushed := map[string]v1.Descriptor{}
	small := map[string][]byte{}
	tr := tar.NewReader(out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("docker image save %s: %v\n%s", src, err, &stderr)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size <= 1<<20 {
			if small[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatalf("docker image save %s: %v", src, err)
			}
			continue
		}
		pushed[h.Name] = pushLayer(t, r.Context(), io.NopCloser(tr))
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("docker image save %s: %v\n%s", src, err, &stderr)
	}
	var saved []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(small["manifest.json"], &saved); err != nil || len(saved) != 1 {
		t.Fatalf("docker image save %s: manifest.json %q: %v", src, small["manifest.json"], err)
	}
	config, ok := small[saved[0].Config]
	if !ok {
		t.Fatalf("docker image save %s: no configuration %s", src, saved[0].Config)
	}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.DockerManifestSchema2}
	cl := static.NewLayer(config, types.DockerConfigJSON)
	if err := remote.WriteLayer(r.Context(), cl); err != nil {
		t.Fatalf("push the configuration of %s: %v", src, err)
	}
	cd, err := partial.Descriptor(cl)
	if err != nil {
		t.Fatal(err)
	}
	m.Config = *cd
	for _, l := range saved[0].Layers {
		d, ok := pushed[l]
		if !ok {
			b, found := small[l]
			if !found {
				t.Fatalf("docker image save %s: no layer %s", src, l)
			}
			d = pushLayer(t, r.Context(), io.NopCloser(bytes.NewReader(b)))
		}
		m.Layers = append(m.Layers, d)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(r, rawManifest(raw)); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// pushLayer pushes the layer tar rc to repo, gzip-framed without
// compression, and returns its descriptor.
func pushLayer(t testing.TB, repo name.Repository, rc io.ReadCloser) v1.Descriptor {
	t.Helper()
	l := stream.NewLayer(rc, stream.WithCompressionLevel(gzip.NoCompression))
	if err := remote.WriteLayer(repo, l); err != nil {
		t.Fatalf("push a layer to %s: %v", repo, err)
	}
	d, err := partial.Descriptor(l)
	if err != nil {
		t.Fatal(err)
	}
	return *d
}

// rawManifest is a manifest pushed as it is.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error) { return m, nil }

// Untag removes the name ref from the engine when the test ends, if it is
// there, without --force: an image that has other names keeps them.
func Untag(t testing.TB, ref string) {
	t.Cleanup(func() {
		if ImagePresent(ref) {
			_ = exec.Command("docker", "image", "rm", ref).Run()
		}
	})
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

// TinyRootFS is a tar of a few-megabyte root file system taken from the
// sandbox image: the named programs (paths inside it) and the libraries
// they load, read by tar inside a container of that image (no network),
// plus /bin/sh (dash), /tmp and /etc. An image made of it has a shell and
// those programs and nothing else.
func TinyRootFS(t testing.TB, programs ...string) []byte {
	t.Helper()
	NeedImage(t)
	script := `set -e; files="$*"; for p in "$@"; do files="$files $(ldd "$p" | grep -o '/[^ ]*' | tr '\n' ' ')"; done
rel=""; for f in $files; do rel="$rel ${f#/}"; done
tar -chf - -C / $(printf '%s\n' $rel | sort -u)`
	args := append([]string{"run", "--rm", "--network", "none", "--entrypoint", "sh", Image(), "-c", script, "sh", "/usr/bin/dash"}, programs...)
	var stderr bytes.Buffer
	cmd := exec.Command("docker", args...)
	cmd.Stderr = &stderr
	files, err := cmd.Output()
	if err != nil {
		t.Fatalf("derive a root file system from %s: %v\n%s", Image(), err, stderr.String())
	}
	// The archive ends with two zero blocks; the extra entries go before them.
	var out bytes.Buffer
	tr := tar.NewReader(bytes.NewReader(files))
	tw := tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/sh", Typeflag: tar.TypeSymlink, Linkname: "/usr/bin/dash", Mode: 0o777},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: "etc/", Typeflag: tar.TypeDir, Mode: 0o755},
	} {
		h.ModTime = time.Unix(0, 0)
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// ImportTiny imports TinyRootFS(programs) as the image ref (removed when
// the test ends), with PATH set.
func ImportTiny(t testing.TB, ref string, programs ...string) {
	t.Helper()
	rootfs := TinyRootFS(t, programs...)
	cmd := exec.Command("docker", "import", "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin", "-", ref)
	cmd.Stdin = bytes.NewReader(rootfs)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker import %s: %v\n%s", ref, err, out)
	}
	RemoveImages(t, ref)
}

// SocketProxy serves, on 127.0.0.1 until the test ends, the Docker engine
// the environment names (DOCKER_HOST, else the local socket) the way a
// restricted socket proxy does (Compose's docker-proxy, HAProxy): requests
// to a refused API section ("distribution", "build"; with or without the
// /v1.NN prefix) get HAProxy's 403, everything else is passed on. It
// returns the proxy's DOCKER_HOST value.
func SocketProxy(t testing.TB, refused ...string) string {
	t.Helper()
	engine := os.Getenv("DOCKER_HOST")
	if engine == "" {
		engine = "unix:///var/run/docker.sock"
	}
	network, addr, ok := strings.Cut(engine, "://")
	if !ok || (network != "unix" && network != "tcp") {
		t.Fatalf("SocketProxy: cannot reach DOCKER_HOST %q", engine)
	}
	var dialer net.Dialer
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		}},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	version := regexp.MustCompile(`^/v[0-9.]+/`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		section, _, _ := strings.Cut(strings.TrimPrefix(version.ReplaceAllString(r.URL.Path, "/"), "/"), "/")
		if slices.Contains(refused, section) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "<html><body><h1>403 Forbidden</h1>\nRequest forbidden by administrative rules.\n</body></html>\n")
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return "tcp://" + strings.TrimPrefix(srv.URL, "http://")
}
