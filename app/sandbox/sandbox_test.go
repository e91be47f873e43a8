package sandbox

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/selfcode/selfcode/internal/poll"
)

func TestContainerIsLockedDown(t *testing.T) {
	lim := Limits{Memory: 512 << 20, CPUs: 1.5, Pids: 200, NoFile: 1024, TmpSize: 64 << 20}
	m, api := newManager(t, lim)
	deadline := time.Now().Add(5 * time.Minute).Truncate(time.Second)
	c := start(t, m, Spec{JobID: "job/lockdown 1", Deadline: deadline})

	info, err := api.ContainerInspect(context.Background(), c.ID())
	if err != nil {
		t.Fatal(err)
	}
	hc := info.HostConfig
	checks := []struct {
		name string
		ok   bool
	}{
		{"user is 10001:10001", info.Config.User == "10001:10001"},
		{"network mode none", hc.NetworkMode == "none"},
		{"all capabilities dropped", slices.Equal(hc.CapDrop, []string{"ALL"}) && len(hc.CapAdd) == 0},
		{"no-new-privileges", slices.Contains(hc.SecurityOpt, "no-new-privileges")},
		{"not privileged", !hc.Privileged},
		{"read-only root", hc.ReadonlyRootfs},
		{"exec-able /tmp tmpfs", strings.Contains(hc.Tmpfs["/tmp"], "exec") && !strings.Contains(hc.Tmpfs["/tmp"], "noexec")},
		{"memory limit", hc.Memory == lim.Memory},
		{"memory+swap equals memory", hc.MemorySwap == lim.Memory},
		{"cpu limit", hc.NanoCPUs == 1_500_000_000},
		{"pids limit", hc.PidsLimit != nil && *hc.PidsLimit == 200},
		{"nofile limit", len(hc.Ulimits) == 1 && hc.Ulimits[0].Name == "nofile" && hc.Ulimits[0].Hard == 1024 && hc.Ulimits[0].Soft == 1024},
		{"init", hc.Init != nil && *hc.Init},
		{"auto remove", hc.AutoRemove},
		{"no binds", len(hc.Binds) == 0},
		{"instance label", info.Config.Labels[LabelInstance] == m.opts.Instance},
		{"job label", info.Config.Labels[LabelJob] == "job/lockdown 1"},
		{"deadline label", info.Config.Labels[LabelDeadline] == deadline.UTC().Format(time.RFC3339)},
	}
	for _, ck := range checks {
		if !ck.ok {
			t.Errorf("host config: %s does not hold", ck.name)
		}
	}
	for _, mp := range info.Mounts {
		if mp.Type != mount.TypeVolume || mp.Destination != "/work" {
			t.Errorf("unexpected mount %+v (only the work volume is allowed)", mp)
		}
		if strings.Contains(mp.Source, "docker.sock") {
			t.Errorf("docker socket mounted: %+v", mp)
		}
		v, err := api.VolumeInspect(context.Background(), mp.Name)
		if err != nil {
			t.Fatal(err)
		}
		if v.Labels[LabelInstance] != m.opts.Instance || v.Labels[LabelJob] != "job/lockdown 1" {
			t.Errorf("work volume labels = %v", v.Labels)
		}
	}

	inside := []struct {
		run, want string
	}{
		{"id -u; id -g", "10001\n10001\n"},
		{"grep CapEff /proc/self/status", "CapEff:\t0000000000000000\n"},
		{"grep NoNewPrivs /proc/self/status", "NoNewPrivs:\t1\n"},
		{"ulimit -n", "1024\n"},
		{"tr '\\0' ' ' </proc/1/cmdline", "/sbin/docker-init -- sleep "},
		{"test -S /var/run/docker.sock || echo no-socket", "no-socket\n"},
		{"pwd", "/work\n"},
	}
	for _, tc := range inside {
		res := mustExec(t, c, Cmd{Run: tc.run})
		if res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want prefix %q", tc.run, res.ExitCode, res.Stdout, res.Stderr, tc.want)
		}
	}
}

func TestWritesOutsideWorkTreeFail(t *testing.T) {
	m, _ := newManager(t, Limits{})
	c := start(t, m, Spec{})
	tests := []struct {
		run  string
		fail string // expected error text; empty: must succeed
	}{
		{"touch /rootfile", "Read-only file system"},
		{"mkdir /usr/local/x", "Read-only file system"},
		{"touch /usr/local/go/bin/x", "Read-only file system"},
		{"touch /var/tmp/x", "Read-only file system"},
		{"touch /etc/passwd", "Permission denied"}, // not root either
		{"touch /work/ok && mkdir -p /work/a/b && echo hi >/work/a/b/c", ""},
		{"printf '#!/bin/sh\\necho ran\\n' >/tmp/s.sh && chmod +x /tmp/s.sh && /tmp/s.sh", ""},
	}
	for _, tc := range tests {
		res := mustExec(t, c, Cmd{Run: tc.run})
		if got := res.ExitCode == 0; got != (tc.fail == "") {
			t.Errorf("%s: exit %d (stderr %q), want success=%v", tc.run, res.ExitCode, res.Stderr, tc.fail == "")
		}
		if tc.fail != "" && !strings.Contains(res.Stderr, tc.fail) {
			t.Errorf("%s: stderr %q, want %q", tc.run, res.Stderr, tc.fail)
		}
	}
}

func TestVerifyHasOnlyLoopback(t *testing.T) {
	m, _ := newManager(t, Limits{})
	c := start(t, m, Spec{})
	res := mustExec(t, c, Cmd{Run: "cat /proc/net/dev"})
	if got := parseNetDev(res.Stdout); !slices.Equal(got, []string{"lo"}) {
		t.Errorf("interfaces = %v, want [lo]", got)
	}
	// With only lo there is no route anywhere: the lookup fails locally.
	res = mustExec(t, c, Cmd{Run: "getent hosts example.com", Timeout: 20 * time.Second})
	if res.ExitCode == 0 {
		t.Errorf("name resolution worked without a network: %q", res.Stdout)
	}
}

func TestSetupNetworkIsDroppedBeforeChanges(t *testing.T) {
	m, api := newManager(t, Limits{})
	c := start(t, m, Spec{SetupNetwork: true})
	ctx := context.Background()

	ifaces, err := c.Interfaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ifaces) < 2 || !slices.Contains(ifaces, "lo") {
		t.Fatalf("setup interfaces = %v, want lo and an attached network", ifaces)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "go.mod"), "module x\n")
	if err := c.CopyTree(ctx, dir); err != nil {
		t.Fatalf("CopyTree (checkout before setup): %v", err)
	}
	if res, err := c.Exec(ctx, Cmd{Run: "cat go.mod", Setup: true}); err != nil || res.Stdout != "module x\n" {
		t.Fatalf("setup command: %+v, %v", res, err)
	}
	if _, err := c.Exec(ctx, Cmd{Run: "go build ./..."}); !errors.Is(err, ErrNetworkAttached) {
		t.Fatalf("verify command with a network = %v, want ErrNetworkAttached", err)
	}
	writeFile(t, filepath.Join(dir, "model.go"), "package x\n")
	if err := c.CopyFiles(ctx, dir, []string{"model.go"}, nil); !errors.Is(err, ErrNetworkAttached) {
		t.Fatalf("CopyFiles with a network = %v, want ErrNetworkAttached", err)
	}

	if err := c.DropNetwork(ctx); err != nil {
		t.Fatalf("DropNetwork: %v", err)
	}
	if ifaces, err := c.Interfaces(ctx); err != nil || !slices.Equal(ifaces, []string{"lo"}) {
		t.Fatalf("after DropNetwork: interfaces %v, %v; want [lo]", ifaces, err)
	}
	info, err := api.ContainerInspect(ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(info.NetworkSettings.Networks); n != 0 {
		t.Errorf("engine still lists %d networks: %v", n, info.NetworkSettings.Networks)
	}
	if err := c.CopyFiles(ctx, dir, []string{"model.go"}, nil); err != nil {
		t.Fatalf("CopyFiles after DropNetwork: %v", err)
	}
	if res, err := c.Exec(ctx, Cmd{Run: "cat model.go"}); err != nil || res.Stdout != "package x\n" {
		t.Fatalf("verify command after DropNetwork: %+v, %v", res, err)
	}
	if err := c.DropNetwork(ctx); err != nil {
		t.Fatalf("DropNetwork again: %v", err)
	}
}

func TestEnvironmentHoldsNoSecrets(t *testing.T) {
	secrets := map[string]string{
		"SELFCODE_WEBHOOK_SECRET": "whsec-" + randomHex(8),
		"SELFCODE_LLM_API_KEY":    "llmkey-" + randomHex(8),
		"SELFCODE_PRIVATE_KEY":    "pem-" + randomHex(8),
		"OPENAI_API_KEY":          "sk-" + randomHex(8),
		"GITHUB_TOKEN":            "ghs_" + randomHex(8),
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	m, _ := newManager(t, Limits{})
	c := start(t, m, Spec{Env: map[string]string{"GOFLAGS": "-mod=mod"}})
	res := mustExec(t, c, Cmd{Run: "env", Env: map[string]string{"CGO_ENABLED": "0"}})
	if res.ExitCode != 0 {
		t.Fatalf("env: exit %d: %s", res.ExitCode, res.Stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		name, _, _ := strings.Cut(line, "=")
		up := strings.ToUpper(name)
		if strings.HasPrefix(up, "SELFCODE_") || strings.Contains(up, "TOKEN") || strings.Contains(up, "KEY") || strings.Contains(up, "SECRET") {
			t.Errorf("container environment has %s", name)
		}
	}
	for k, v := range secrets {
		if strings.Contains(res.Stdout, v) {
			t.Errorf("value of %s leaked into the container", k)
		}
	}
	for _, want := range []string{"GOFLAGS=-mod=mod", "CGO_ENABLED=0", "HOME=/tmp"} {
		if !strings.Contains(res.Stdout, want+"\n") {
			t.Errorf("environment lacks %s", want)
		}
	}

	if _, err := m.Start(context.Background(), Spec{JobID: "x", Env: map[string]string{"GITHUB_TOKEN": "t"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Start with a token variable = %v, want ErrInvalid", err)
	}
	if _, err := c.Exec(context.Background(), Cmd{Run: "true", Env: map[string]string{"SELFCODE_LLM_API_KEY": "k"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Exec with a key variable = %v, want ErrInvalid", err)
	}

	// The operator's variables (SELFCODE_SANDBOX_ENV) reach every command;
	// a secret-looking one stops the manager from starting at all.
	if _, err := New(context.Background(), Options{Instance: "test-" + randomHex(4), Image: testImage(), Env: map[string]string{"NPM_TOKEN": "t"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New with a token variable = %v, want ErrInvalid", err)
	}
	m2, err := New(context.Background(), Options{Instance: "test-" + randomHex(4), Image: testImage(), Logger: testLogger(t),
		Env: map[string]string{"GOPROXY": "http://mirror.invalid/go", "GOFLAGS": "-x"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m2.Close() })
	c2 := start(t, m2, Spec{Env: map[string]string{"GOFLAGS": "-mod=mod"}})
	res = mustExec(t, c2, Cmd{Run: "env"})
	for _, want := range []string{"GOPROXY=http://mirror.invalid/go\n", "GOFLAGS=-mod=mod\n"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("environment lacks %q (the spec wins over the manager)", want)
		}
	}
}

func TestForkBombStoppedByPidsLimit(t *testing.T) {
	m, _ := newManager(t, Limits{Pids: 64, KillAfter: time.Second})
	c := start(t, m, Spec{})
	res := mustExec(t, c, Cmd{Run: "f() { f | f & }; f; sleep 60", Timeout: 3 * time.Second})
	// The shell ends either at the timeout (124) or when it cannot fork
	// `sleep` itself (2); either way the container must not need killing.
	if res.Killed || res.ExitCode == 0 {
		t.Fatalf("fork bomb: exit %d, killed %v; want it ended inside the container", res.ExitCode, res.Killed)
	}
	if !strings.Contains(res.Stderr, "fork") {
		t.Errorf("stderr %.200q; want fork failures", res.Stderr)
	}
	ev := mustExec(t, c, Cmd{Run: "cat /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids/pids.current 2>/dev/null || cat /sys/fs/cgroup/pids.events /sys/fs/cgroup/pids.current"})
	f := strings.Fields(ev.Stdout)
	if len(f) != 3 || f[0] != "max" || f[1] == "0" {
		t.Fatalf("pids.events = %q, want the limit to have refused forks", ev.Stdout)
	}
	// Nothing of the bomb is left: init, its sleep, and this shell and cat.
	if n, err := strconv.Atoi(f[2]); err != nil || n > 8 {
		t.Errorf("%s processes after the bomb; want it gone", f[2])
	}
}

func TestLeftoverProcessesAreKilled(t *testing.T) {
	m, _ := newManager(t, Limits{})
	c := start(t, m, Spec{})
	if res := mustExec(t, c, Cmd{Run: "sleep 1001 & echo started"}); res.Stdout != "started\n" || res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	res := mustExec(t, c, Cmd{Run: "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c 'sleep 100[1]'"})
	if res.Stdout != "0\n" {
		t.Errorf("%s background processes of the last command left running; want none", strings.TrimSpace(res.Stdout))
	}
}

func TestMemoryLimitReportsOOM(t *testing.T) {
	m, _ := newManager(t, Limits{Memory: 96 << 20, TmpSize: 16 << 20})
	c := start(t, m, Spec{})
	// GNU tail keeps a line-less input in memory until it ends.
	res := mustExec(t, c, Cmd{Run: "tail /dev/zero", Timeout: time.Minute})
	if !res.OOMKilled || res.ExitCode != 137 {
		t.Errorf("tail /dev/zero: exit %d, OOMKilled %v, stderr %q; want exit 137 and OOMKilled", res.ExitCode, res.OOMKilled, res.Stderr)
	}
	if res := mustExec(t, c, Cmd{Run: "exit 3"}); res.ExitCode != 3 || res.OOMKilled {
		t.Errorf("exit 3 after the OOM: %+v, want exit 3 and no OOM", res)
	}
}

func TestTimeoutEndsCommand(t *testing.T) {
	m, api := newManager(t, Limits{KillAfter: time.Second})
	c := start(t, m, Spec{})
	res := mustExec(t, c, Cmd{Run: "sleep 3600", Timeout: 2 * time.Second})
	if !res.TimedOut || res.ExitCode != 124 || res.Killed {
		t.Fatalf("sleep 3600: %+v; want TimedOut with exit 124 from timeout", res)
	}
	if res := mustExec(t, c, Cmd{Run: "trap '' TERM; sleep 3600", Timeout: time.Second}); !res.TimedOut || res.ExitCode != 137 {
		t.Errorf("TERM-ignoring command: %+v; want TimedOut with exit 137 (timeout -k)", res)
	}
	vol := c.volume
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitGone(t, api, c.ID(), 5*time.Second)
	if volumeExists(t, api, vol) {
		t.Errorf("work volume %s survived Close", shortID(vol))
	}
	if err := c.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Exec(context.Background(), Cmd{Run: "true"}); !isGone(err) {
		t.Errorf("Exec after Close = %v, want ErrContainerGone", err)
	}
}

func TestHostDeadlineKillsContainer(t *testing.T) {
	m, api := newManager(t, Limits{KillAfter: time.Second})
	c := start(t, m, Spec{})
	vol := c.volume
	// Stopping GNU timeout (the command's parent) defeats the first layer;
	// the host-side deadline must then kill the whole container.
	res, err := c.Exec(context.Background(), Cmd{Run: "kill -STOP $PPID; echo stopped; sleep 3600", Timeout: time.Second})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if !res.Killed || !res.TimedOut || res.Stdout != "stopped\n" {
		t.Fatalf("result %+v; want Killed and TimedOut with the output so far", res)
	}
	waitGone(t, api, c.ID(), 5*time.Second)
	if volumeExists(t, api, vol) {
		t.Errorf("work volume %s survived the kill", shortID(vol))
	}
	if _, err := c.Exec(context.Background(), Cmd{Run: "true"}); !isGone(err) {
		t.Errorf("Exec after the kill = %v, want ErrContainerGone", err)
	}
}

func TestOutputCap(t *testing.T) {
	m, _ := newManager(t, Limits{})
	c := start(t, m, Spec{})
	const capBytes, stopBytes = 1 << 20, 16 << 20
	// Past the cap the middle is cut and the command goes on: its exit
	// status stands (truncation never turns a pass into a failure).
	res := mustExec(t, c, Cmd{Run: "seq 1 1000000; echo done", OutputCap: capBytes, OutputStop: stopBytes, Timeout: 2 * time.Minute})
	if !res.Truncated || res.OutputStopped || res.ExitCode != 0 || res.TimedOut ||
		!strings.HasPrefix(res.Stdout, "1\n2\n3\n") || !strings.HasSuffix(res.Stdout, "999999\n1000000\ndone\n") ||
		!strings.Contains(res.Stdout, "selfcode cut") || len(res.Stdout) > capBytes+100 {
		t.Errorf("long print: truncated %v, stopped %v, exit %d, timed out %v, %d bytes kept",
			res.Truncated, res.OutputStopped, res.ExitCode, res.TimedOut, len(res.Stdout))
	}
	// Past the stop limit the command is stopped.
	res = mustExec(t, c, Cmd{Run: "head -c 1G /dev/zero", OutputCap: capBytes, OutputStop: stopBytes, Timeout: 2 * time.Minute})
	if !res.OutputStopped || !res.Truncated || len(res.Stdout) > capBytes+100 || res.ExitCode == 0 || res.TimedOut {
		t.Errorf("1 GiB print: stopped %v, truncated %v, %d bytes kept, exit %d, timed out %v; want it stopped after %d bytes",
			res.OutputStopped, res.Truncated, len(res.Stdout), res.ExitCode, res.TimedOut, stopBytes)
	}
	res = mustExec(t, c, Cmd{Run: "echo out; echo err >&2; exit 7"})
	if res.Stdout != "out\n" || res.Stderr != "err\n" || res.ExitCode != 7 || res.Truncated {
		t.Errorf("separate streams: %+v", res)
	}
	if res.Output != "out\nerr\n" && res.Output != "err\nout\n" {
		t.Errorf("combined output = %q", res.Output)
	}
}

// go vet and go test run in the sandbox (with the repository's cache,
// which starts from the image's pre-warmed standard library).
func TestGoTestRunsInside(t *testing.T) {
	t.Parallel()
	m := cacheManager(t, 10<<30, "")
	c := start(t, m, Spec{Cache: testRepo(t, m, "gotest")})
	if err := c.CopyTree(context.Background(), "testdata/gomod"); err != nil {
		t.Fatal(err)
	}
	res := mustExec(t, c, Cmd{Run: "go vet ./... && go test ./...", Timeout: 5 * time.Minute})
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "ok") {
		t.Fatalf("go test: exit %d\n%s", res.ExitCode, res.Output)
	}
}

func TestCopyTreeAndFiles(t *testing.T) {
	m, _ := newManager(t, Limits{})
	c := start(t, m, Spec{})
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "one\n")
	writeFile(t, filepath.Join(dir, "sub", "b.txt"), "bee\n")
	writeFile(t, filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\necho script\n")
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyTree(ctx, dir); err != nil {
		t.Fatalf("CopyTree: %v", err)
	}
	res := mustExec(t, c, Cmd{Run: "cat a.txt sub/b.txt link && ./run.sh && test ! -e .git && stat -c %u:%g . sub sub/b.txt"})
	if want := "one\nbee\none\nscript\n10001:10001\n10001:10001\n10001:10001\n"; res.Stdout != want {
		t.Fatalf("after CopyTree: %q (stderr %q), want %q", res.Stdout, res.Stderr, want)
	}

	if res := mustExec(t, c, Cmd{Run: "pwd; cat b.txt", Dir: "sub"}); res.Stdout != "/work/sub\nbee\n" {
		t.Errorf("Dir sub: %q (stderr %q)", res.Stdout, res.Stderr)
	}
	if _, err := c.Exec(ctx, Cmd{Run: "pwd", Dir: "../etc"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Dir ../etc = %v, want ErrInvalid", err)
	}

	writeFile(t, filepath.Join(dir, "a.txt"), "two\n")
	writeFile(t, filepath.Join(dir, "new", "deep", "c.txt"), "sea\n")
	if err := os.RemoveAll(filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyFiles(ctx, dir, []string{"a.txt", "new/deep/c.txt"}, []string{"sub"}); err != nil {
		t.Fatalf("CopyFiles: %v", err)
	}
	res = mustExec(t, c, Cmd{Run: "cat a.txt new/deep/c.txt && test ! -e sub && stat -c %u new new/deep && touch new/deep/writable"})
	if want := "two\nsea\n10001\n10001\n"; res.Stdout != want || res.ExitCode != 0 {
		t.Fatalf("after CopyFiles: %q (stderr %q, exit %d), want %q", res.Stdout, res.Stderr, res.ExitCode, want)
	}

	for _, bad := range []string{"../x", "/etc/passwd", "", ".", "a/../../b"} {
		if err := c.CopyFiles(ctx, dir, []string{bad}, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("CopyFiles(%q) = %v, want ErrInvalid", bad, err)
		}
		if err := c.CopyFiles(ctx, dir, nil, []string{bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("CopyFiles deleting %q = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestCancelRemovesContainer(t *testing.T) {
	m, api := newManager(t, Limits{})
	c := start(t, m, Spec{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, Cmd{Run: "touch /tmp/started; sleep 3600"})
		done <- err
	}()
	poll.Until(t, "the command to start", 30*time.Second, func() bool {
		return mustExec(t, c, Cmd{Run: "test -e /tmp/started"}).ExitCode == 0
	})
	cancel()
	waitGone(t, api, c.ID(), 5*time.Second)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Exec after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Exec did not return after cancel")
	}
}

func TestDeadlineEndsContainer(t *testing.T) {
	m, api := newManager(t, Limits{})
	c := start(t, m, Spec{Deadline: time.Now().Add(2 * time.Second)})
	vol := c.volume
	waitGone(t, api, c.ID(), 20*time.Second)
	if volumeExists(t, api, vol) {
		t.Errorf("work volume %s survived the deadline", shortID(vol))
	}
	if _, err := c.Exec(context.Background(), Cmd{Run: "true"}); !isGone(err) {
		t.Errorf("Exec after the deadline = %v, want ErrContainerGone", err)
	}
}

func TestOrphanOfKilledProcessIsReaped(t *testing.T) {
	api := dockerClient(t)
	instance := "orphan-" + randomHex(4)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+instance)
	cmd.Stderr = t.Output()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Scan()
		lines <- sc.Text()
	}()
	var id string
	select {
	case id = <-lines:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("helper did not report a container within 60s")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if id == "" {
		t.Fatal("helper failed to start a container")
	}
	info, err := api.ContainerInspect(context.Background(), id)
	if err != nil || !info.State.Running {
		t.Fatalf("orphan not running after its owner was killed: %v", err)
	}
	vols := func() int {
		l, err := api.VolumeList(context.Background(), volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelInstance+"="+instance))})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Volumes)
	}
	if vols() != 1 {
		t.Fatalf("orphan volume count = %d, want 1", vols())
	}

	m, err := New(context.Background(), Options{Instance: instance, Image: testImage(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	waitGone(t, api, id, 5*time.Second)
	if n := vols(); n != 0 {
		t.Errorf("%d orphan volumes left after the reap", n)
	}
}

func TestReapPastDeadlineOnly(t *testing.T) {
	api := dockerClient(t)
	ctx := context.Background()
	create := func(deadline time.Time) string {
		labels := map[string]string{
			LabelInstance: "other-" + randomHex(4), LabelJob: "j",
			LabelDeadline: deadline.UTC().Format(time.RFC3339),
		}
		created, err := api.ContainerCreate(ctx,
			&container.Config{Image: testImage(), Entrypoint: []string{"sleep", "120"}, Labels: labels},
			&container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Target: "/work", VolumeOptions: &mount.VolumeOptions{Labels: labels}}}},
			nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			api.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		})
		if err := api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		return created.ID
	}
	expired := create(time.Now().Add(-time.Minute))
	current := create(time.Now().Add(time.Hour))

	m, _ := newManager(t, Limits{}) // its startup reap
	waitGone(t, api, expired, 5*time.Second)
	if _, err := api.ContainerInspect(ctx, current); err != nil {
		t.Errorf("another instance's container within its deadline was reaped: %v", err)
	}
	// A periodic Reap leaves this manager's own live containers alone.
	c := start(t, m, Spec{})
	if _, err := m.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if res := mustExec(t, c, Cmd{Run: "true"}); res.ExitCode != 0 {
		t.Errorf("live container broken by Reap: %+v", res)
	}
}

func TestEngineWarningFailsStart(t *testing.T) {
	m, api := newManager(t, Limits{IOWeight: 500})
	job := "warn-" + randomHex(3)
	c, err := m.Start(context.Background(), Spec{JobID: job})
	if err == nil {
		c.Close(context.Background())
		t.Skip("this engine honours a block I/O weight, so no create warning can be provoked")
	}
	var werr *WarningError
	if !errors.As(err, &werr) || !errors.Is(err, ErrEngineWarning) || len(werr.Warnings) == 0 {
		t.Fatalf("Start = %v, want a WarningError", err)
	}
	left, err := api.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelJob+"="+job))})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d containers left after a refused create", len(left))
	}
}

func TestEngineDescriptionAndRuntime(t *testing.T) {
	m, api := newManager(t, Limits{})
	ctx := context.Background()
	if err := m.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	info, err := m.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.ServerVersion == "" || (info.CgroupVersion != "1" && info.CgroupVersion != "2") ||
		!slices.Contains(info.Runtimes, info.DefaultRuntime) || info.Runsc != slices.Contains(info.Runtimes, "runsc") {
		t.Errorf("Describe = %+v", info)
	}

	if _, err := New(ctx, Options{Instance: "rt-" + randomHex(3), Runtime: "no-such-runtime", Logger: testLogger(t)}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New with an unknown runtime = %v, want ErrInvalid", err)
	}
	rm, err := New(ctx, Options{Instance: "rt-" + randomHex(3), Image: testImage(), Runtime: info.DefaultRuntime, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	c := start(t, rm, Spec{})
	ci, err := api.ContainerInspect(ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	if ci.HostConfig.Runtime != info.DefaultRuntime {
		t.Errorf("runtime = %q, want %q", ci.HostConfig.Runtime, info.DefaultRuntime)
	}

	if _, err := m.Start(ctx, Spec{JobID: "x", Image: "selfcode-no-such-image:never"}); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("Start with a missing image = %v, want ErrImageNotFound", err)
	}
}

func TestUnreachableEngine(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	m, err := New(context.Background(), Options{Instance: "down", Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("New without an engine = %v, want a Manager that reports the engine down", err)
	}
	defer m.Close()
	if err := m.Ping(context.Background()); !errors.Is(err, ErrEngineUnavailable) {
		t.Errorf("Ping = %v, want ErrEngineUnavailable", err)
	}
	if _, err := m.Start(context.Background(), Spec{JobID: "x"}); !errors.Is(err, ErrEngineUnavailable) {
		t.Errorf("Start = %v, want ErrEngineUnavailable", err)
	}
}

func writeFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestToolchainsRunOffline checks that the default image runs Python and
// Node.js projects with no network: pytest and unittest in a virtual
// environment that sees the image's packages, node --test, mocha, jest
// and TypeScript's compiler.
func TestToolchainsRunOffline(t *testing.T) {
	m, _ := newManager(t, Limits{})
	c := start(t, m, Spec{})
	if err := c.CopyTree(context.Background(), "testdata/toolchains"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, run, want string }{
		{"venv pytest", "python3 -m venv --system-site-packages /tmp/venv && cd py && /tmp/venv/bin/python -m pytest -rA -p no:cacheprovider", "PASSED test_calc.py::test_add"},
		{"unittest", "cd py && python3 -m unittest -v test_calc", "test_add (test_calc.TestAdd"},
		{"node --test", "cd js && node --test add.test.js", "ok 1 - adds"},
		{"mocha", "cd js && mocha add.mocha.js", "1 passing"},
		{"jest", "cd js && jest --ci add.spec.js 2>&1", "Tests:       1 passed"},
		{"tsc", "cd ts && tsc -p . && echo typechecked", "typechecked"},
		{"typescript module", `node -e 'console.log(typeof require("typescript").transpileModule)'`, "function"},
		{"npm", "npm --version", "."},
	} {
		res := mustExec(t, c, Cmd{Run: tc.run, Timeout: 3 * time.Minute})
		if res.ExitCode != 0 || !strings.Contains(res.Output, tc.want) {
			t.Errorf("%s: exit %d, want output containing %q:\n%s", tc.name, res.ExitCode, tc.want, res.Output)
		}
	}
}
