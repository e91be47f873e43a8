package gitops

import (
	"errors"
	"testing"
)

func TestPushRejection(t *testing.T) {
	cases := []struct {
		name, out string
		want      error
	}{
		{"stale lease", "To http://h/a/b.git\n!\tHEAD:refs/heads/selfcode/x\t[rejected] (stale info)\nDone\n", ErrLeaseRejected},
		{"non-ff", "To http://h/a/b.git\n!\tHEAD:refs/heads/f\t[rejected] (non-fast-forward)\nDone\n", ErrNonFastForward},
		{"fetch first", "!\tHEAD:refs/heads/f\t[rejected] (fetch first)\n", ErrNonFastForward},
		{"protected", "!\tHEAD:refs/heads/f\t[remote rejected] (protected branch hook declined)\n", ErrRemoteRejected},
		{"ok", "To http://h/a/b.git\n \tHEAD:refs/heads/f\tabc..def\nDone\n", nil},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := pushRejection(tc.out)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("got %v, want nil", got)
				}
				return
			}
			if !errors.Is(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseChanges(t *testing.T) {
	status := []byte("M\x00a.go\x00A\x00dir/b c.go\x00D\x00old.txt\x00")
	numstat := []byte("3\t1\ta.go\x0010\t0\tdir/b c.go\x00-\t-\told.txt\x00")
	got, err := parseChanges(status, numstat)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{
		{Path: "a.go", Status: "modified", Added: 3, Deleted: 1},
		{Path: "dir/b c.go", Status: "added", Added: 10},
		{Path: "old.txt", Status: "deleted", Binary: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := parseChanges([]byte("R100\x00a\x00"), nil); err == nil {
		t.Error("unknown status accepted")
	}
	if got, err := parseChanges(nil, nil); err != nil || len(got) != 0 {
		t.Errorf("empty input: %+v, %v", got, err)
	}
}

func FuzzParseChanges(f *testing.F) {
	f.Add([]byte("M\x00a.go\x00"), []byte("1\t2\ta.go\x00"))
	f.Add([]byte("A\x00\x00D"), []byte("-\t-\t\x00x"))
	f.Fuzz(func(t *testing.T, status, numstat []byte) {
		got, err := parseChanges(status, numstat)
		if err != nil {
			return
		}
		for _, fc := range got {
			if fc.Status == "" {
				t.Fatalf("change without status: %+v", fc)
			}
		}
	})
}

func FuzzPushRejection(f *testing.F) {
	f.Add("!\tHEAD:refs/heads/f\t[remote rejected] (x)\n")
	f.Add("!\t\n")
	f.Fuzz(func(t *testing.T, out string) {
		_ = pushRejection(out)
	})
}
