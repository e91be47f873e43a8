package pipeline_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/testreport"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// npmTarball packs files (relative to the package root) the way npm
// publishes them: a gzipped tar with everything under package/.
func npmTarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// npmRegistry serves one package, name@version, on the Docker bridge, as
// the npm registry does (packument and tarball), and counts tarball
// downloads.
func npmRegistry(t *testing.T, name, version string, files map[string]string) (string, *atomic.Int64) {
	t.Helper()
	tgz := npmTarball(t, files)
	sha1sum := sha1.Sum(tgz)
	sha512sum := sha512.Sum512(tgz)
	var base string
	var downloads atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /"+name, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"name": name, "dist-tags": map[string]string{"latest": version},
			"versions": map[string]any{version: map[string]any{
				"name": name, "version": version, "main": "index.js",
				"dist": map[string]string{
					"tarball":   base + "/" + name + "/-/" + name + "-" + version + ".tgz",
					"shasum":    hex.EncodeToString(sha1sum[:]),
					"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:]),
				},
			}},
		})
	})
	mux.HandleFunc("GET /"+name+"/-/"+name+"-"+version+".tgz", func(w http.ResponseWriter, r *http.Request) {
		downloads.Add(1)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(tgz)
	})
	base = dockertest.ServeOnBridge(t, mux)
	return base, &downloads
}

// greeter serves the package pkg@1.0.0 from a registry on this machine
// and returns a Node.js repository depending on it, whose description
// (in package.json) the caller picks, and the registry's download count.
func greeter(t *testing.T, pkg string) (func(description string) map[string]string, *atomic.Int64) {
	t.Helper()
	registry, downloads := npmRegistry(t, pkg, "1.0.0", map[string]string{
		"package.json": `{"name":"` + pkg + `","version":"1.0.0","main":"index.js"}`,
		"index.js":     "exports.greeting = () => \"hello\";\n",
	})
	return func(description string) map[string]string {
		return map[string]string{
			".npmrc": "registry=" + registry + "/\n",
			"package.json": `{"name":"greeter","version":"1.0.0","description":"` + description + `","private":true,"dependencies":{"` + pkg +
				`":"1.0.0"},"scripts":{"test":"node --test"}}` + "\n",
			"greet.js": "const { greeting } = require(\"" + pkg + "\");\nexports.greet = (name) => greeting() + \", \" + name + \".\";\n",
			"test/greet.test.js": "const assert = require(\"node:assert\");\nconst test = require(\"node:test\");\nconst { greet } = require(\"../greet\");\n" +
				"test(\"greets\", () => assert.strictEqual(greet(\"bob\"), \"hello, bob!\"));\ntest(\"starts with hello\", () => assert.match(greet(\"x\"), /^hello/));\n",
		}
	}, downloads
}

// greeterJob runs a job on repository repo (files) that makes greet end
// with "!", and fails unless the change is verified with the greets test
// fixed.
func greeterJob(t *testing.T, repo string, files map[string]string) *pipeline.Output {
	t.Helper()
	h := newHarness(t, files, "", []fakeopenai.Step{
		planner(calcPlan),
		editor(call("str_replace", map[string]any{"path": "greet.js", "old_str": `name + "."`, "new_str": `name + "!"`})),
		editor(call("finish", map[string]any{"summary": "greet ends with !"})),
	}...)
	out, err := h.run(func(in *pipeline.Input) { in.Repository = repo })
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != verify.Verified || out.Comparison == nil || !anyContains(out.Comparison.Fixed, "greets") || len(out.Verify) == 0 {
		t.Fatalf("verdict %q, comparison %+v", out.Verdict, out.Comparison)
	}
	return out
}

// An inferred setup step installs a declared dependency from the registry
// the repository's .npmrc names (served by the test on this machine), and
// the change is then verified offline with it.
func TestSetupInstallsFromALocalRegistry(t *testing.T) {
	t.Parallel()
	m := dockertest.Manager(t)
	// A repository whose npm cache is empty, so the download is needed.
	repo := dockertest.FreshRepo(t, m, "registry")
	files, downloads := greeter(t, "words-local")
	out := greeterJob(t, repo, files(""))
	setup := out.Base.Setup
	if len(setup) != 1 || !setup[0].Passed || setup[0].Run != "npm install --no-audit --no-fund --no-package-lock" {
		t.Fatalf("base setup %+v", setup)
	}
	if downloads.Load() == 0 {
		t.Error("the dependency was never downloaded from the local registry")
	}
}

// What setup made is kept in the repository's cache: the next job with the
// same manifests restores it instead of running setup (no download), and a
// job whose package.json differs runs setup again.
func TestSetupRestoredUntilAManifestChanges(t *testing.T) {
	t.Parallel()
	m := dockertest.Manager(t)
	repo := dockertest.FreshRepo(t, m, "setup-cache")
	files, downloads := greeter(t, "words-kept")
	job := func(description string) verify.CommandResult {
		t.Helper()
		out := greeterJob(t, repo, files(description))
		setup := out.Verify[len(out.Verify)-1].Run.Setup
		if len(setup) != 1 || !setup[0].Passed {
			t.Fatalf("setup %+v", setup)
		}
		return setup[0]
	}
	const restored = "restored from the repository's cache"
	if first := job("one"); strings.Contains(first.Output, restored) || downloads.Load() == 0 {
		t.Fatalf("first job: setup %+v, %d downloads", first, downloads.Load())
	}
	before := downloads.Load()
	if again := job("one"); !strings.Contains(again.Output, restored) || downloads.Load() != before {
		t.Fatalf("same manifests: setup %+v, downloads %d → %d", again, before, downloads.Load())
	}
	if changed := job("two"); strings.Contains(changed.Output, restored) {
		t.Fatalf("package.json changed, setup restored anyway: %+v", changed)
	}
}

// A kept node_modules spoiled in the repository's cache (the dependency
// altered) makes "starts with hello" fail on the base and on the change
// alike; the change really breaks that test. The base, failing with the
// kept setup, is verified again with setup from scratch, so the change is
// not verified, the spoiled setup is forgotten, and the baseline kept for
// later jobs is the one set up from scratch.
func TestSpoiledKeptSetupHidesNoRegression(t *testing.T) {
	t.Parallel()
	m := dockertest.Manager(t)
	repo := dockertest.FreshRepo(t, m, "spoiled-setup")
	files, _ := greeter(t, "words-spoiled")
	greeterJob(t, repo, files("")) // keeps node_modules in the repository's cache

	ctx := context.Background()
	sh := func(run string) sandbox.Result {
		t.Helper()
		c, err := m.Start(ctx, sandbox.Spec{JobID: "spoil-" + dockertest.Suffix(), Cache: repo})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		r, err := c.Exec(ctx, sandbox.Cmd{Run: run, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	const spoil = `set -e; n=0; for f in /cache/deps/*/tree/node_modules/words-spoiled/index.js; do
		echo 'exports.greeting = () => "HELLO";' > "$f"; n=$((n+1)); done; test $n = 1`
	if r := sh(spoil); r.ExitCode != 0 {
		t.Fatalf("spoil the kept node_modules: exit %d\n%s", r.ExitCode, r.Output)
	}

	// Another base commit with the same manifests: the kept setup applies,
	// and no baseline of it is cached yet.
	second := files("")
	second["README.md"] = "A greeter.\n"
	kept, err := verify.NewCache(verify.CacheOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, func(o *pipeline.Options, _ *sandbox.Manager) { o.Baseline = kept }, second, "limits: {max_fix_attempts: 0}\n",
		planner(calcPlan),
		editor(call("str_replace", map[string]any{"path": "greet.js", "old_str": `greeting() + ", "`, "new_str": `"hi, "`})),
		editor(call("finish", map[string]any{"summary": "greet says hi"})))
	out, err := h.run(func(in *pipeline.Input) { in.Repository = repo })
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != verify.Failed || out.Comparison == nil || !anyContains(out.Comparison.Regressions, "starts with hello") {
		t.Fatalf("verdict %q, comparison %+v: the change breaks \"starts with hello\"", out.Verdict, out.Comparison)
	}
	base, found, err := kept.Get(h.baselineKey(repo))
	if err != nil || !found {
		t.Fatalf("no baseline kept (%v): the one set up from scratch should be", err)
	}
	passed := false
	for _, c := range base.Commands {
		if c.Tests == nil {
			continue
		}
		for id, st := range c.Tests.Tests {
			passed = passed || strings.HasSuffix(id.Name, "starts with hello") && st == testreport.Pass
		}
	}
	if !passed {
		t.Errorf("the baseline kept fails \"starts with hello\": it is the spoiled one (%+v)", base.Commands)
	}
	if r := sh(`! grep -rqs HELLO /cache/deps`); r.ExitCode != 0 {
		t.Errorf("the spoiled setup is still kept: %s", r.Output)
	}
}
