package eval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/selfcode/selfcode/internal/atomicfile"
)

// storeVersion changes when the stored task or the grading does: results
// of another version are run again.
const storeVersion = 2 // 2: old tests hidden by the held-back tests are graded by the base run

// store keeps finished tasks, one JSON file each, so a second run skips
// them. Files are written whole (a temporary file renamed), so an
// interrupted run leaves each task either kept or not.
type store struct{ dir string }

type storedTask struct {
	Version int    `json:"version"`
	Key     string `json:"key"`
	Task    Task   `json:"task"`
}

// taskKey names a task's result: the repository, the commit, the models
// of each role and whatever else the caller says decides it
// (Options.Fingerprint).
func taskKey(top, commit string, models map[string]string, fingerprint string) string {
	h := sha256.New()
	fmt.Fprintf(h, "selfcode-eval-v%d\x00%s\x00%s\x00", storeVersion, top, commit)
	roles := make([]string, 0, len(models))
	for r := range models {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	for _, r := range roles {
		fmt.Fprintf(h, "%s=%s\x00", r, models[r])
	}
	h.Write([]byte(fingerprint))
	return hex.EncodeToString(h.Sum(nil))[:40]
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func (s store) path(key string) string { return filepath.Join(s.dir, key+".json") }

// load returns the task kept under key, if any.
func (s store) load(key string) (Task, bool, error) {
	if s.dir == "" {
		return Task{}, false, nil
	}
	b, err := os.ReadFile(s.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return Task{}, false, nil
	}
	if err != nil {
		return Task{}, false, err
	}
	var st storedTask
	if err := json.Unmarshal(b, &st); err != nil || st.Version != storeVersion || st.Key != key {
		return Task{}, false, nil // unreadable or of another version: run it again
	}
	return st.Task, true, nil
}

// save keeps a finished task under key.
func (s store) save(key string, t Task) error {
	if s.dir == "" {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	t.Resumed = false
	b, err := json.MarshalIndent(storedTask{Version: storeVersion, Key: key, Task: t}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.path(key), b)
}

// kept reports whether a task of this status is kept: a grade or a skip
// holds for the commit; an environment error may be passing (a setup
// that needed the network) and an error was not the task's, so both run
// again next time.
func kept(s Status) bool { return s == StatusResolved || s == StatusUnresolved || s == StatusSkipped }

// firstLine is a message's subject.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(line)
}
