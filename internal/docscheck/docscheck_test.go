package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/job"
)

var root = filepath.Join("..", "..")

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOperationsNamesEveryMetric: the metrics table of operations.md lists
// every metric app/metrics registers.
func TestOperationsNamesEveryMetric(t *testing.T) {
	src := read(t, "app/metrics/metrics.go")
	names := regexp.MustCompile(`"(selfcode_[a-z_]+)"`).FindAllStringSubmatch(src, -1)
	if len(names) < 8 {
		t.Fatalf("found only %d metric names in app/metrics/metrics.go", len(names))
	}
	doc := read(t, "docs/operations.md")
	for _, n := range names {
		if !strings.Contains(doc, "`"+n[1]+"`") {
			t.Errorf("docs/operations.md does not describe the metric %s", n[1])
		}
	}
	for _, n := range regexp.MustCompile("`(selfcode_[a-z_]+)`").FindAllStringSubmatch(doc, -1) {
		if !strings.Contains(src, `"`+n[1]+`"`) {
			t.Errorf("docs/operations.md names %s, which app/metrics does not register", n[1])
		}
	}
}

// TestOperationsNamesEveryOutcome: the outcomes table of operations.md has
// a row for every job outcome app/job defines (limit_reached included), and
// names every limit a job stops at and every job state.
func TestOperationsNamesEveryOutcome(t *testing.T) {
	src := read(t, "app/job/job.go")
	doc := read(t, "docs/operations.md")
	outcomes := regexp.MustCompile(`Outcome\s*=\s*"([a-z_]+)"`).FindAllStringSubmatch(src, -1)
	stops := regexp.MustCompile(`Stop\s*=\s*"([a-z_]+)"`).FindAllStringSubmatch(src, -1)
	if len(outcomes) < 8 || len(stops) < 5 {
		t.Fatalf("found only %d outcomes and %d stops in app/job/job.go", len(outcomes), len(stops))
	}
	for _, o := range outcomes {
		if !strings.Contains(doc, "| `"+o[1]+"` |") {
			t.Errorf("the outcomes table of docs/operations.md has no row for %s", o[1])
		}
	}
	for _, s := range stops {
		if !strings.Contains(doc, "`"+s[1]+"`") {
			t.Errorf("docs/operations.md does not name the limit %s", s[1])
		}
	}
	for _, st := range job.States {
		if !strings.Contains(doc, "`"+string(st)+"`") {
			t.Errorf("docs/operations.md does not name the state %s", st)
		}
	}
}

// TestDocsNameRealSettings: every SELFCODE_ variable the docs mention
// exists (or is a documented non-config variable).
func TestDocsNameRealSettings(t *testing.T) {
	known := map[string]bool{}
	for _, f := range config.Fields() {
		known[f.Env] = true
	}
	// Not configuration settings, but real names used in the docs.
	for _, k := range []string{"SELFCODE_REQUIRE_BROWSER", "SELFCODE_REQUIRE_DOCKER"} {
		known[k] = true
	}
	for _, doc := range []string{"docs/operations.md", "docs/security.md"} {
		text := read(t, doc)
		for _, m := range regexp.MustCompile(`SELFCODE_[A-Z_]+[A-Z]`).FindAllString(text, -1) {
			if !known[m] {
				t.Errorf("%s mentions %s, which is not a setting", doc, m)
			}
		}
	}
}

// TestDocsLinksExist: relative links in docs/*.md point at files that exist.
func TestDocsLinksExist(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(files) < 3 {
		t.Fatalf("docs: %v %v", files, err)
	}
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			p := filepath.Join(filepath.Dir(f), filepath.FromSlash(target))
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to %s, which does not exist", filepath.Base(f), target)
			}
		}
	}
}
