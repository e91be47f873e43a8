package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/selfcode/selfcode/app/sandbox"
	"github.com/selfcode/selfcode/internal/dockertest"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// Report files a command writes are read back from the sandbox: only the
// ones matching the patterns and written by this command, not older ones.
func TestSessionReadsReportFiles(t *testing.T) {
	t.Parallel()
	m := dockertest.Manager(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sess, err := sandbox.Backend{Manager: m}.Start(ctx, pipeline.SandboxSpec{JobID: "reports", Deadline: time.Now().Add(3 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sess.CopyTree(ctx, dir); err != nil {
		t.Fatal(err)
	}
	reports := []string{"/tmp/selfcode-reports/*.json", "**/junit-*.xml"}
	// A report left by an earlier command is not this command's.
	if _, err := sess.Exec(ctx, verify.Command{Name: "old", Run: "mkdir -p out && echo old > out/junit-old.xml", Reports: reports}); err != nil {
		t.Fatal(err)
	}
	out, err := sess.Exec(ctx, verify.Command{Name: "test", Reports: reports, Run: `
		echo '{"a":1}' > /tmp/selfcode-reports/jest.json
		echo '<testsuites/>' > out/junit-new.xml
		echo 'not a report' > out/other.xml
		mkdir -p node_modules/x && echo '<testsuites/>' > node_modules/x/junit-dep.xml
		echo printed; exit 3`})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range out.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"/tmp/selfcode-reports/jest.json", "/work/out/junit-new.xml"}; !slices.Equal(names, want) {
		t.Fatalf("files read = %q, want %q", names, want)
	}
	if got := strings.TrimSpace(string(out.Files["/work/out/junit-new.xml"])); got != "<testsuites/>" || out.ExitCode != 3 || !strings.Contains(out.Output, "printed") {
		t.Errorf("outcome %+v, junit %q", out, got)
	}
}
