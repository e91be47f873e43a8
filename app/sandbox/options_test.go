package sandbox

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLimitsDefaultsAreValid(t *testing.T) {
	l := Limits{}.withDefaults()
	if err := l.validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if l.Memory != DefaultMemory || l.Pids != DefaultPids || l.OutputCap != DefaultOutputCap || l.KillAfter != DefaultKillAfter {
		t.Errorf("defaults not applied: %+v", l)
	}
	kept := Limits{Memory: 256 << 20, Pids: 32}.withDefaults()
	if kept.Memory != 256<<20 || kept.Pids != 32 {
		t.Errorf("explicit limits overwritten: %+v", kept)
	}
}

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Limits)
	}{
		{"tiny memory", func(l *Limits) { l.Memory = 1 << 20 }},
		{"negative cpus", func(l *Limits) { l.CPUs = -1 }},
		{"few pids", func(l *Limits) { l.Pids = 2 }},
		{"few files", func(l *Limits) { l.NoFile = 10 }},
		{"tiny tmp", func(l *Limits) { l.TmpSize = 1024 }},
		{"io weight too high", func(l *Limits) { l.IOWeight = 5000 }},
		{"sub-second timeout", func(l *Limits) { l.CommandTimeout = time.Millisecond }},
		{"sub-second kill-after", func(l *Limits) { l.KillAfter = time.Millisecond }},
		{"tiny output cap", func(l *Limits) { l.OutputCap = 10 }},
		{"sub-second job", func(l *Limits) { l.JobTimeout = time.Millisecond }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := Limits{}.withDefaults()
			tc.mod(&l)
			if err := l.validate(); !errors.Is(err, ErrInvalid) {
				t.Errorf("validate = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"defaults", Options{Instance: "prod-1"}, true},
		{"no instance", Options{}, false},
		{"instance with slash", Options{Instance: "a/b"}, false},
		{"root user", Options{Instance: "x", User: "0:0"}, false},
		{"root group", Options{Instance: "x", User: "1000:0"}, false},
		{"named user", Options{Instance: "x", User: "sandbox"}, false},
		{"relative workdir", Options{Instance: "x", Workdir: "work"}, false},
		{"workdir in tmp", Options{Instance: "x", Workdir: "/tmp/w"}, false},
		{"custom workdir", Options{Instance: "x", Workdir: "/src", User: "1000:1000"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.withDefaults().validate()
			if (err == nil) != tc.ok {
				t.Errorf("validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestCheckEnv(t *testing.T) {
	tests := []struct {
		env map[string]string
		ok  bool
	}{
		{map[string]string{"GOFLAGS": "-mod=mod", "CGO_ENABLED": "0", "CI": "true"}, true},
		{nil, true},
		{map[string]string{"GITHUB_TOKEN": "x"}, false},
		{map[string]string{"openai_api_key": "x"}, false},
		{map[string]string{"SELFCODE_ADDR": ":1"}, false},
		{map[string]string{"DB_PASSWORD": "x"}, false},
		{map[string]string{"AWS_SECRET_ACCESS_KEY": "x"}, false},
		{map[string]string{"1BAD": "x"}, false},
		{map[string]string{"A=B": "x"}, false},
		{map[string]string{"NUL": "a\x00b"}, false},
	}
	for _, tc := range tests {
		if err := checkEnv(tc.env); (err == nil) != tc.ok {
			t.Errorf("checkEnv(%v) = %v, want ok=%v", tc.env, err, tc.ok)
		}
	}
}

func TestCheckRelPath(t *testing.T) {
	tests := []struct {
		p  string
		ok bool
	}{
		{"a.go", true},
		{"dir/sub/b.go", true},
		{"dir/../c.go", true},
		{"", false},
		{".", false},
		{"dir/..", false},
		{"..", false},
		{"../x", false},
		{"a/../../x", false},
		{"/etc/passwd", false},
		{"a\x00b", false},
	}
	for _, tc := range tests {
		if err := checkRelPath(tc.p); (err == nil) != tc.ok {
			t.Errorf("checkRelPath(%q) = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
}

func TestParseNetDev(t *testing.T) {
	const onlyLo = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
`
	const two = onlyLo + `  eth0:     572       6    0    0    0     0          0         0        0       0    0    0    0     0       0          0
`
	tests := []struct {
		in   string
		want []string
	}{
		{onlyLo, []string{"lo"}},
		{two, []string{"eth0", "lo"}},
		{"", nil},
		{"header\nheader\n", nil},
	}
	for _, tc := range tests {
		if got := parseNetDev(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("parseNetDev = %v, want %v", got, tc.want)
		}
	}
}

func TestParseOOMKills(t *testing.T) {
	tests := []struct {
		in   string
		n    int64
		okay bool
	}{
		{"oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", 3, true},                // cgroup v1
		{"low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n", 1, true}, // cgroup v2
		{"oom_kill_disable 0\n", 0, false},
		{"oom_kill x\n", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		n, ok := parseOOMKills(tc.in)
		if n != tc.n || ok != tc.okay {
			t.Errorf("parseOOMKills(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.okay)
		}
	}
}

func TestSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{time.Second, "1s"},
		{1500 * time.Millisecond, "1.5s"},
		{10 * time.Minute, "600s"},
		{time.Nanosecond, "0.001s"},
	}
	for _, tc := range tests {
		if got := seconds(tc.d); got != tc.want {
			t.Errorf("seconds(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestNameSafe(t *testing.T) {
	if got := nameSafe("job/1 ünï"); got != "job-1---n--" { // per byte
		t.Errorf("nameSafe = %q", got)
	}
	if got := nameSafe(strings.Repeat("a", 100)); len(got) != 40 {
		t.Errorf("nameSafe kept %d characters, want 40", len(got))
	}
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	c := newCapture(10, 100)
	out, errw := stream{c, c.stdout}, stream{c, c.stderr}
	for _, w := range []struct {
		s    stream
		data string
	}{{out, "12345"}, {errw, "abc"}, {out, "6789"}, {out, "XYZ"}} {
		if _, err := w.s.Write([]byte(w.data)); err != nil {
			t.Fatal(err)
		}
	}
	var r Result
	c.fill(&r)
	if r.Stdout != "12345\n"+fmt.Sprintf(TruncationNote, 2)+"\n89XYZ" {
		t.Errorf("stdout = %q", r.Stdout)
	}
	if r.Stderr != "abc" || !r.Truncated || r.OutputStopped {
		t.Errorf("capture = %+v", r)
	}
	if want := "12345\n" + fmt.Sprintf(TruncationNote, 5) + "\n89XYZ"; r.Output != want {
		t.Errorf("combined = %q, want %q", r.Output, want)
	}
}

func TestCaptureStopsAtOutputStop(t *testing.T) {
	t.Parallel()
	c := newCapture(4, 6)
	out := stream{c, c.stdout}
	if _, err := out.Write([]byte("1234")); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write([]byte("56789")); !errors.Is(err, errStopReached) {
		t.Fatalf("write past the stop = %v, want errStopReached", err)
	}
	var r Result
	c.fill(&r)
	if !r.OutputStopped || !r.Truncated || r.Stdout != "12\n"+fmt.Sprintf(TruncationNote, 2)+"\n56" {
		t.Errorf("capture = %+v", r)
	}
}

func TestHeadTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		keep   int64
		writes []string
		want   string
	}{
		{keep: 8, writes: []string{"abc"}, want: "abc"},
		{keep: 8, writes: []string{"abcdefgh"}, want: "abcdefgh"},
		{keep: 8, writes: []string{"abcdefghij"}, want: "abcd\n" + fmt.Sprintf(TruncationNote, 2) + "\nghij"},
		{keep: 8, writes: []string{"ab", "cd", "ef", "gh", "ij", "kl"}, want: "abcd\n" + fmt.Sprintf(TruncationNote, 4) + "\nijkl"},
		{keep: 8, writes: []string{"abcd", strings.Repeat("x", 100), "wxyz"}, want: "abcd\n" + fmt.Sprintf(TruncationNote, 100) + "\nwxyz"},
		{keep: 8, writes: []string{"abcd\n", "efgh"}, want: "abcd\n" + fmt.Sprintf(TruncationNote, 1) + "\nefgh"},
	}
	for _, tc := range tests {
		h := newHeadTail(tc.keep)
		for _, w := range tc.writes {
			h.Write([]byte(w))
		}
		if got := h.String(); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.writes, got, tc.want)
		}
	}
}

func FuzzHeadTail(f *testing.F) {
	f.Add(int64(8), []byte("abcdefghijkl"), 3)
	f.Fuzz(func(t *testing.T, keep int64, data []byte, chunk int) {
		keep = 2 + abs64(keep)%64
		chunk = 1 + int(abs64(int64(chunk))%16)
		h := newHeadTail(keep)
		for i := 0; i < len(data); i += chunk {
			h.Write(data[i:min(i+chunk, len(data))])
		}
		half := int(keep / 2)
		if int64(len(data)) <= int64(2*half) {
			if h.String() != string(data) {
				t.Fatalf("short input changed: %q → %q", data, h.String())
			}
			return
		}
		if h.cut != int64(len(data)-2*half) {
			t.Fatalf("cut %d, want %d", h.cut, len(data)-2*half)
		}
		if !strings.HasPrefix(h.String(), string(data[:half])) || !strings.HasSuffix(h.String(), string(data[len(data)-half:])) {
			t.Fatalf("head/tail lost: %q from %q", h.String(), data)
		}
	})
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func FuzzParseNetDev(f *testing.F) {
	f.Add("Inter-|\n face |\n    lo: 0 0\n  eth0: 1 2\n")
	f.Add("")
	f.Add("a\nb\n:\n::\n x:y:z\n")
	f.Fuzz(func(t *testing.T, s string) {
		names := parseNetDev(s)
		if !slices.IsSorted(names) {
			t.Errorf("not sorted: %v", names)
		}
		for i, n := range names {
			if n == "" || strings.ContainsAny(n, ":\n") || n != strings.TrimSpace(n) {
				t.Errorf("bad name %q", n)
			}
			if i > 0 && names[i-1] == n {
				t.Errorf("duplicate %q", n)
			}
		}
	})
}

func FuzzParseOOMKills(f *testing.F) {
	f.Add("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
	f.Add("oom_kill -1\n")
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseOOMKills(s)
		if n < 0 || (!ok && n != 0) {
			t.Errorf("parseOOMKills(%q) = %d, %v", s, n, ok)
		}
	})
}

func FuzzCheckRelPath(f *testing.F) {
	for _, s := range []string{"a", "../a", "/a", "a/../..", ".", "a/./b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if checkRelPath(p) != nil {
			return
		}
		// Accepted paths stay strictly below the work tree.
		clean := path.Join("/work", filepath.ToSlash(p))
		if clean == "/work" || !strings.HasPrefix(clean, "/work/") {
			t.Errorf("accepted %q which resolves to %q", p, clean)
		}
	})
}

func TestCheckRepository(t *testing.T) {
	for _, tt := range []struct {
		repo string
		ok   bool
	}{
		{"octo/widgets", true}, {"Octo-Org/widgets.js", true},
		{"", false}, {"widgets", false}, {"/widgets", false}, {"octo/", false}, {"octo/a/b", false}, {"octo/wid gets", false}, {"octo/w\n", false},
	} {
		if err := CheckRepository(tt.repo); (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("CheckRepository(%q) = %v, want ok %v", tt.repo, err, tt.ok)
		}
	}
}
