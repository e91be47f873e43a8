package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/selfcode/selfcode/internal/poll"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/smoke"
)

// probeImageFiles is the build context of a shadow service that reports on
// its own container (testdata/probeserver, built static on the host so that
// its image is FROM scratch and builds in a second).
func probeImageFiles(t *testing.T) string {
	t.Helper()
	dir := writeTreeFiles(t, map[string]string{"Dockerfile": "FROM scratch\nCOPY probeserver /probeserver\nCMD [\"/probeserver\"]\n"})
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "probeserver"), "./testdata/probeserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the probe server: %v\n%s", err, out)
	}
	return dir
}

// leftovers lists what carries instance's label on the engine.
func leftovers(t *testing.T, api *client.Client, instance string) []string {
	t.Helper()
	ctx := context.Background()
	f := filters.NewArgs(filters.Arg("label", LabelInstance+"="+instance))
	var out []string
	cs, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		out = append(out, "container "+c.Names[0])
	}
	ns, err := api.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		out = append(out, "network "+n.Name)
	}
	is, err := api.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", SmokeRepository+":*"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range is {
		for _, ref := range i.RepoTags {
			if l, ok := smokeTagLabels(ref); ok && l[LabelInstance] == instance {
				out = append(out, "image "+ref)
			}
		}
	}
	return out
}

// noLeftovers fails when anything of instance, or any of the images ids,
// is still on the engine.
func noLeftovers(t *testing.T, api *client.Client, instance string, ids []string) {
	t.Helper()
	if l := leftovers(t, api, instance); len(l) > 0 {
		t.Errorf("left on the engine: %v", l)
	}
	for _, id := range ids {
		if _, err := api.ImageInspect(context.Background(), id); !errdefs.IsNotFound(err) {
			t.Errorf("image %s made by the build is still there (%v)", id, err)
		}
	}
}

// testBuildLabel marks what one test build makes: its Dockerfile sets it
// (labelStep) right after FROM, and the classic builder copies a label to
// every later step's intermediate container and image, dangling layers of a
// failed build included. Other tests on the shared engine never carry the
// value, so a leftover check scoped by it cannot blame them.
const testBuildLabel = "selfcode.test.build"

// labelStep is the Dockerfile line that marks a build's steps with run.
func labelStep(run string) string { return "LABEL " + testBuildLabel + "=" + run + "\n" }

// madeBy lists the images (intermediate and dangling ones included) and
// containers (stopped or never started included) that carry run's label.
func madeBy(t *testing.T, api *client.Client, run string) (images, containers []string) {
	t.Helper()
	ctx := context.Background()
	f := filters.NewArgs(filters.Arg("label", testBuildLabel+"="+run))
	is, err := api.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range is {
		images = append(images, strings.TrimPrefix(i.ID, "sha256:"))
	}
	cs, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		containers = append(containers, c.ID)
	}
	return images, containers
}

// nothingMadeBy fails when an image or container of run's build remains.
func nothingMadeBy(t *testing.T, api *client.Client, run string) {
	t.Helper()
	if is, cs := madeBy(t, api, run); len(is)+len(cs) > 0 {
		t.Errorf("the build left %d image(s) %v and %d container(s) %v on the engine", len(is), is, len(cs), cs)
	}
}

// cleanupInstance removes whatever a failed test left of instance.
func cleanupInstance(t *testing.T, instance string) {
	t.Cleanup(func() {
		m, err := New(context.Background(), Options{Instance: instance, Image: testImage(), Logger: slog.New(slog.DiscardHandler)})
		if err == nil {
			m.Close()
		}
	})
}

// buildFrom snapshots a tree holding files and builds it.
func buildFrom(t *testing.T, b SmokeBackend, files map[string]string) (smoke.Image, error) {
	t.Helper()
	return buildDir(t, b, writeTreeFiles(t, files))
}

// buildDir snapshots dir and builds it.
func buildDir(t *testing.T, b SmokeBackend, dir string) (smoke.Image, error) {
	t.Helper()
	snap, err := b.Snapshot(context.Background(), dir, "Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Remove()
	return b.Build(context.Background(), smoke.BuildSpec{JobID: "smoke-" + randomHex(3), Snapshot: snap, Deadline: time.Now().Add(10 * time.Minute)})
}

// bridgeListener starts an HTTP server on the engine's default bridge,
// waits until this process reaches it, and returns its address.
func bridgeListener(t *testing.T, api *client.Client, instance string) string {
	t.Helper()
	ctx := context.Background()
	c, err := api.ContainerCreate(ctx, &container.Config{Image: testImage(), Cmd: []string{"python3", "-m", "http.server", "8099"},
		Labels: map[string]string{LabelInstance: instance, LabelJob: "bridge-listener"}},
		&container.HostConfig{NetworkMode: network.NetworkBridge, CapDrop: []string{"ALL"}}, nil, nil, "selfcode-test-listener-"+randomHex(4))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) })
	if err := api.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	info, err := api.ContainerInspect(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	addr := info.NetworkSettings.Networks[network.NetworkBridge].IPAddress + ":8099"
	poll.Until(t, "the bridge listener to answer", time.Minute, func() bool {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return addr
}

// shadowGet sends GET path to the shadow's service the way the smoke stage
// does: over connections from its Dial.
func shadowGet(t *testing.T, sh smoke.Shadow, path string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return sh.Dial(ctx) }}}
	resp, err := c.Get(sh.URL() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// hostListener serves HTTP on every interface of this machine (as a
// public listener does, selfcode's :8080 say) and returns its address on
// the engine's default bridge (docker0) — a host address every
// bridge-networked container could reach — after checking that this
// process reaches it there. ok is false when the engine is not on this
// machine (no address here is in that bridge's subnet).
func hostListener(t *testing.T, api *client.Client) (addr string, ok bool) {
	t.Helper()
	nw, err := api.NetworkInspect(context.Background(), network.NetworkBridge, network.InspectOptions{})
	if err != nil || len(nw.IPAM.Config) == 0 {
		t.Fatalf("inspect the default bridge: %v (%+v)", err, nw.IPAM)
	}
	_, subnet, err := net.ParseCIDR(nw.IPAM.Config[0].Subnet)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var host net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && subnet.Contains(n.IP) {
			host = n.IP
		}
	}
	if host == nil {
		return "", false
	}
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "host") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	addr = net.JoinHostPort(host.String(), strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("this process does not reach its own listener at %s: %v", addr, err)
	}
	resp.Body.Close()
	return addr, true
}

func TestSmokeShadow(t *testing.T) {
	m, api := newManager(t, Limits{Memory: 256 << 20, CPUs: 0.5, Pids: 64, TmpSize: 16 << 20})
	cleanupInstance(t, m.opts.Instance)
	b := SmokeBackend{Manager: m}
	ctx := context.Background()
	if err := b.Available(ctx); err != nil {
		t.Fatalf("Available: %v", err)
	}
	img, err := buildDir(t, b, probeImageFiles(t))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	ids := img.(*builtImage).IDs()
	if len(ids) == 0 || slices.Contains(ids, "") {
		t.Fatalf("build made images %q", ids)
	}

	t.Run("locked down, with no network: reached through its helper only", func(t *testing.T) {
		deadline := time.Now().Add(5 * time.Minute).Truncate(time.Second)
		sh, err := b.Start(ctx, smoke.RunSpec{JobID: "job/shadow 1", Image: img, Port: 8080, Env: map[string]string{"APP_ENV": "smoke"}, ReadOnly: true, Deadline: deadline})
		if err != nil {
			t.Fatal(err)
		}
		s := sh.(*shadow)
		poll.Until(t, "the shadow service to answer", time.Minute, func() bool {
			conn, err := sh.Dial(ctx)
			if err == nil {
				conn.Close()
			}
			return err == nil
		})
		if _, body := shadowGet(t, sh, "/env"); body != "smoke" {
			t.Errorf("APP_ENV = %q", body)
		}
		if _, body := shadowGet(t, sh, "/write"); body != "30" { // EROFS
			t.Errorf("writing / gave %q, want errno 30 (read-only file system)", body)
		}
		// No network: not a single route, so neither a container on the
		// engine's default bridge nor a listener on every interface of the
		// host (which a bridge network's gateway leads to) is reachable,
		// while this process reaches both (the probes never leave the
		// machine).
		if _, routes := shadowGet(t, sh, "/route"); strings.Count(strings.TrimSpace(routes), "\n") != 0 {
			t.Errorf("the shadow container has routes:\n%s", routes)
		}
		other := bridgeListener(t, api, m.opts.Instance)
		if _, body := shadowGet(t, sh, "/dial?addr="+other); body == "connected" {
			t.Errorf("the shadow container reached %s on another network", other)
		}
		if host, ok := hostListener(t, api); ok {
			if _, body := shadowGet(t, sh, "/dial?addr="+host); body == "connected" || !strings.Contains(body, "network is unreachable") {
				t.Errorf("dialing the host's listener at %s from the shadow container: %s", host, body)
			}
		} else {
			t.Log("the engine is not on this machine: the host listener check does not apply")
		}
		_, status := shadowGet(t, sh, "/status")
		if !strings.Contains(status, "CapEff:\t0000000000000000") || !strings.Contains(status, "NoNewPrivs:\t1") {
			t.Errorf("capabilities or no-new-privileges not as expected:\n%s", status)
		}
		info, err := api.ContainerInspect(ctx, s.id)
		if err != nil {
			t.Fatal(err)
		}
		hc := info.HostConfig
		helper, err := api.ContainerInspect(ctx, s.helper)
		if err != nil {
			t.Fatal(err)
		}
		hhc := helper.HostConfig
		helperLabelled := true
		for k, v := range m.smokeLabels("job/shadow 1", deadline) {
			helperLabelled = helperLabelled && helper.Config.Labels[k] == v
		}
		checks := []struct {
			name string
			ok   bool
		}{
			{"all capabilities dropped", slices.Equal(hc.CapDrop, []string{"ALL"}) && len(hc.CapAdd) == 0},
			{"no-new-privileges", slices.Contains(hc.SecurityOpt, "no-new-privileges")},
			{"not privileged", !hc.Privileged},
			{"read-only root", hc.ReadonlyRootfs},
			{"a /tmp tmpfs", strings.Contains(hc.Tmpfs["/tmp"], "size=")},
			{"memory limit", hc.Memory == 256<<20 && hc.MemorySwap == 256<<20},
			{"cpu limit", hc.NanoCPUs == 500_000_000},
			{"pids limit", hc.PidsLimit != nil && *hc.PidsLimit == 64},
			{"no host mounts", len(hc.Binds) == 0 && len(info.Mounts) == 0},
			{"no published ports", len(hc.PortBindings) == 0 && !hc.PublishAllPorts},
			{"in its helper's network namespace", string(hc.NetworkMode) == "container:"+s.helper},
			{"the helper has no network", string(hhc.NetworkMode) == network.NetworkNone && len(hhc.PortBindings) == 0},
			{"the helper locked down", slices.Equal(hhc.CapDrop, []string{"ALL"}) && slices.Contains(hhc.SecurityOpt, "no-new-privileges") &&
				hhc.ReadonlyRootfs && !hhc.Privileged && len(helper.Mounts) == 0 && hhc.PidsLimit != nil && *hhc.PidsLimit == helperPids &&
				hhc.Memory == helperMemory && helper.Config.User == m.opts.User},
			{"labels for the reaper", info.Config.Labels[LabelInstance] == m.opts.Instance && info.Config.Labels[LabelJob] == "job/shadow 1" &&
				info.Config.Labels[LabelDeadline] == deadline.UTC().Format(time.RFC3339) && helperLabelled},
		}
		for _, ck := range checks {
			if !ck.ok {
				t.Errorf("%s does not hold", ck.name)
			}
		}
		logs, err := sh.Logs(ctx, 20)
		if err != nil || !strings.Contains(logs, "listening on 8080") {
			t.Errorf("logs %q err %v", logs, err)
		}
		if st, err := sh.State(ctx); err != nil || !st.Running {
			t.Errorf("state %+v err %v", st, err)
		}
		if err := sh.Close(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{s.id, s.helper} {
			poll.Until(t, "the shadow's containers to be removed", time.Minute, func() bool {
				_, err := api.ContainerInspect(ctx, id)
				return errdefs.IsNotFound(err)
			})
		}
	})

	t.Run("a port nothing listens on is refused, by the service's side", func(t *testing.T) {
		sh, err := b.Start(ctx, smoke.RunSpec{JobID: "refused", Image: img, Port: 8081, ReadOnly: true, Deadline: time.Now().Add(5 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close(ctx)
		conn, err := sh.Dial(ctx)
		if err == nil {
			conn.Close()
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, smoke.ErrEngine) {
			t.Errorf("Dial to a closed port: %v, want connection refused", err)
		}
	})

	t.Run("a service listening on its loopback only fails, saying so", func(t *testing.T) {
		// The forwarder reaches it over the loopback its helper shares;
		// a published port would not.
		sh, err := b.Start(ctx, smoke.RunSpec{JobID: "loopback", Image: img, Port: 8080, Env: map[string]string{"PROBE_LISTEN": "127.0.0.1:8080"},
			ReadOnly: true, Deadline: time.Now().Add(5 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close(ctx)
		var f *smoke.Failure
		poll.Until(t, "the loopback-only service to be judged", time.Minute, func() bool {
			conn, err := sh.Dial(ctx)
			switch {
			case err == nil:
				conn.Close()
				t.Fatal("a service listening on 127.0.0.1 only was reached")
			case errors.As(err, &f):
				return true
			case !errors.Is(err, syscall.ECONNREFUSED):
				t.Fatalf("Dial: %v", err)
			}
			return false // not listening yet
		})
		if want := "port 8080: the service listens on 127.0.0.1 only: unreachable from outside its container"; !strings.Contains(f.Reason, want) {
			t.Errorf("reason %q, want it to hold %q", f.Reason, want)
		}
	})

	t.Run("a crashed run's containers and image are reaped at the next start", func(t *testing.T) {
		instance := "test-" + randomHex(4)
		cleanupInstance(t, instance)
		crashed, err := New(ctx, Options{Instance: instance, Image: testImage(), Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		cb := SmokeBackend{Manager: crashed}
		left, err := buildFrom(t, cb, map[string]string{"Dockerfile": "FROM scratch\nLABEL purpose=leftover\n"})
		if err != nil {
			t.Fatal(err)
		}
		leftIDs := left.(*builtImage).IDs()
		if _, err := cb.Start(ctx, smoke.RunSpec{JobID: "crashed", Image: img, Port: 8080, ReadOnly: true, Deadline: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		crashed.Close() // nothing removed: as if the process died
		if l := leftovers(t, api, instance); len(l) != 3 || len(leftIDs) != 1 {
			t.Fatalf("the crashed run should have left a shadow container, its helper and an image: %v", l)
		}
		next, err := New(ctx, Options{Instance: instance, Image: testImage(), Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		next.Close()
		noLeftovers(t, api, instance, leftIDs)
		if _, err := api.ImageInspect(ctx, img.Ref()); err != nil {
			t.Errorf("another instance's image was reaped: %v", err)
		}
	})

	if err := img.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the bridge listener to be removed", time.Minute, func() bool { return len(leftovers(t, api, m.opts.Instance)) == 0 })
	noLeftovers(t, api, m.opts.Instance, ids)
	if _, err := api.ImageInspect(ctx, testImage()); err != nil {
		t.Fatalf("the base image is gone: %v", err)
	}
}

func TestSmokeBuildFailures(t *testing.T) {
	m, api := newManager(t, Limits{})
	cleanupInstance(t, m.opts.Instance)
	b := SmokeBackend{Manager: m}

	t.Run("a Dockerfile that tries the network fails with the reason", func(t *testing.T) {
		t.Parallel()
		run := randomHex(6)
		dir := writeTreeFiles(t, map[string]string{"Dockerfile": "FROM " + testImage() + "\n" + labelStep(run) + "RUN python3 -c \"import urllib.request; urllib.request.urlopen('http://example.com/', timeout=5)\"\nCMD [\"true\"]\n"})
		cfg := repoconfig.DefaultSmoke()
		cfg.Port = 8080
		rows, err := smoke.Run(context.Background(), b, smoke.Spec{JobID: "net", Config: *cfg,
			Context: func(ctx context.Context) (*smoke.Snapshot, error) { return b.Snapshot(ctx, dir, "Dockerfile") }})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Name != repoconfig.SmokeBuildStep || rows[0].Passed || rows[0].Error != "" {
			t.Fatalf("rows %+v", rows)
		}
		for _, want := range []string{"Temporary failure in name resolution", "returned a non-zero code: 1", "The image build has no network"} {
			if !strings.Contains(rows[0].Output, want) {
				t.Errorf("output lacks %q:\n%s", want, rows[0].Output)
			}
		}
		nothingMadeBy(t, api, run)
	})
	t.Run("a base image not on the engine is refused, never pulled", func(t *testing.T) {
		t.Parallel()
		_, err := buildFrom(t, b, map[string]string{"Dockerfile": "ARG V=0.0.1-nonexistent\nFROM busybox:${V}\n"})
		var f *smoke.Failure
		if !errors.As(err, &f) || !strings.Contains(f.Reason, "busybox:0.0.1-nonexistent, which is not on the Docker engine; selfcode never pulls") {
			t.Fatalf("err = %v", err)
		}
		if _, err := api.ImageInspect(context.Background(), "busybox:0.0.1-nonexistent"); !errdefs.IsNotFound(err) {
			t.Errorf("the image was pulled: %v", err)
		}
	})
	t.Run("a failing step's layers and intermediate containers go with it", func(t *testing.T) {
		t.Parallel()
		// Step 2 commits a layer, step 3 another, step 4 fails in its
		// intermediate container.
		run := randomHex(6)
		_, err := buildFrom(t, b, map[string]string{"Dockerfile": "FROM " + testImage() + "\n" + labelStep(run) + "RUN echo layer >/tmp/layer\nRUN echo failing; exit 3\n"})
		var f *smoke.Failure
		if !errors.As(err, &f) || !strings.Contains(f.Log, "Step 4/4") || !strings.Contains(f.Log, "failing") || !strings.Contains(f.Reason, "returned a non-zero code: 3") {
			t.Fatalf("err = %v", err)
		}
		nothingMadeBy(t, api, run)
	})
	t.Run("the label finds every layer a build made, until the image is removed", func(t *testing.T) {
		t.Parallel()
		// What makes the checks above able to fail: madeBy sees the
		// intermediate layer (step 2) under the image (step 3).
		run := randomHex(6)
		img, err := buildFrom(t, b, map[string]string{"Dockerfile": "FROM scratch\n" + labelStep(run) + "COPY Dockerfile /Dockerfile\n"})
		if err != nil {
			t.Fatal(err)
		}
		ids := img.(*builtImage).IDs()
		found, _ := madeBy(t, api, run)
		matched := len(found) == len(ids) && len(ids) == 2
		for _, id := range ids {
			matched = matched && slices.ContainsFunc(found, func(f string) bool { return strings.HasPrefix(f, id) })
		}
		if !matched {
			t.Errorf("the build reported images %v; its label finds %v", ids, found)
		}
		if err := img.Remove(context.Background()); err != nil {
			t.Fatal(err)
		}
		nothingMadeBy(t, api, run)
	})
	t.Cleanup(func() { noLeftovers(t, api, m.opts.Instance, nil) })
}

// The image build's RUN steps get the job's memory, CPU and open-file
// limits, read back from their own cgroup in the build log; and what
// docs/security.md says the classic builder cannot restrict is so: no pids
// limit, Docker's default capabilities for a root step, no
// no-new-privileges, and security options refused for a build.
func TestSmokeBuildLimits(t *testing.T) {
	m, api := newManager(t, Limits{Memory: 320 << 20, CPUs: 0.5, NoFile: 1234})
	cleanupInstance(t, m.opts.Instance)
	b := SmokeBackend{Manager: m}
	ctx := context.Background()

	t.Run("a RUN step runs under the job's memory, CPU and open-file limits", func(t *testing.T) {
		t.Parallel()
		run := randomHex(6)
		// The step prints what it got and fails, so that its log comes
		// back (with the failure).
		step := "RUN set -- " + strings.Join(cgroupFiles, " ") + "; " + cgroupScript +
			`; echo "nofile $(ulimit -n)"; grep -E '^(CapEff|NoNewPrivs):' /proc/self/status; exit 7` + "\n"
		_, err := buildFrom(t, b, map[string]string{"Dockerfile": "FROM " + testImage() + "\n" + labelStep(run) + "USER root\n" + step})
		var f *smoke.Failure
		if !errors.As(err, &f) || !strings.Contains(f.Reason, "returned a non-zero code: 7") {
			t.Fatalf("err = %v", err)
		}
		if got, want := parseCgroupLimits(f.Log), (CgroupLimits{Memory: 320 << 20, MilliCPUs: 500, Pids: -1}); got != want {
			t.Errorf("the RUN step's cgroup holds %+v, want %+v (no pids limit: the build API has none)\n%s", got, want, f.Log)
		}
		for _, want := range []string{"nofile 1234\n", "NoNewPrivs:\t0\n"} {
			if !strings.Contains(f.Log, want) {
				t.Errorf("the log lacks %q:\n%s", want, f.Log)
			}
		}
		if strings.Contains(f.Log, "CapEff:\t0000000000000000") || !strings.Contains(f.Log, "CapEff:\t") {
			t.Errorf("a root RUN step should have Docker's default capabilities:\n%s", f.Log)
		}
		nothingMadeBy(t, api, run)
	})
	t.Run("the engine refuses security options on a build", func(t *testing.T) {
		t.Parallel()
		run := randomHex(6)
		df, err := dockerfileContext("FROM scratch\n" + labelStep(run))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := m.api.ImageBuild(ctx, df, build.ImageBuildOptions{Version: build.BuilderV1, NoCache: true, Remove: true, ForceRemove: true,
			NetworkMode: network.NetworkNone, SecurityOpt: []string{"no-new-privileges"}})
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if is, _ := madeBy(t, api, run); len(is) > 0 {
				api.ImageRemove(ctx, is[0], image.RemoveOptions{})
			}
			t.Fatal("the engine took no-new-privileges for a build: apply it in Manager.build and update docs/security.md")
		}
		if !errdefs.IsInvalidArgument(err) {
			t.Errorf("err = %v, want the engine's refusal", err)
		}
		nothingMadeBy(t, api, run)
	})
}
