package eval

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStoreKeepsFinishedTasks(t *testing.T) {
	t.Parallel()
	s := store{dir: filepath.Join(t.TempDir(), "eval")}
	models := map[string]string{"planner": "a", "editor": "b"}
	key := taskKey("/src/calc", commitMul, models, "endpoint=x")
	for _, other := range []string{
		taskKey("/src/other", commitMul, models, "endpoint=x"),
		taskKey("/src/calc", commitAdd, models, "endpoint=x"),
		taskKey("/src/calc", commitMul, map[string]string{"planner": "a", "editor": "c"}, "endpoint=x"),
		taskKey("/src/calc", commitMul, models, "endpoint=y"),
	} {
		if other == key {
			t.Fatal("two different evaluations share a key")
		}
	}
	if _, ok, err := s.load(key); ok || err != nil {
		t.Fatalf("an empty store found %v (%v)", ok, err)
	}
	done := true
	want := Task{Commit: commitMul, Status: StatusResolved, Resolved: true, Verdict: "verified", Agrees: &done, Fixed: []string{"TestMul"}, Resumed: true}
	if err := s.save(key, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.load(key)
	if err != nil || !ok || got.Commit != commitMul || got.Status != StatusResolved || got.Agrees == nil || !*got.Agrees || got.Resumed {
		t.Fatalf("loaded %+v %v %v", got, ok, err)
	}
	// Another version's or a damaged file is run again, not trusted.
	if err := os.WriteFile(s.path(key), []byte(`{"version": 0, "key": "`+key+`", "task": {"status": "resolved"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.load(key); ok {
		t.Fatal("a result of another version was kept")
	}
	if err := os.WriteFile(s.path(key), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.load(key); ok {
		t.Fatal("a damaged result was kept")
	}
	for st, want := range map[Status]bool{StatusResolved: true, StatusUnresolved: true, StatusSkipped: true, StatusEnvError: false, StatusError: false} {
		if kept(st) != want {
			t.Errorf("kept(%s) = %v", st, !want)
		}
	}
}
