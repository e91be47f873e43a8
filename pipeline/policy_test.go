package pipeline_test

import (
	"testing"

	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/tools"
)

// The repository's opt-in under .github reaches the model's path policy;
// without one, all of .github is off-limits.
func TestPathPolicyCarriesTheOptIn(t *testing.T) {
	t.Parallel()
	cfg, err := repoconfig.Parse([]byte("paths: {github_opt_in: [.github/ISSUE_TEMPLATE/**]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := pipeline.PathPolicy(cfg).Check(".github/ISSUE_TEMPLATE/bug.md"); a != tools.Writable {
		t.Errorf("opted in: %d", a)
	}
	for _, c := range []*repoconfig.Config{cfg, nil} {
		if a := pipeline.PathPolicy(c).Check(".github/actions/x/action.yml"); a != tools.OffLimits {
			t.Errorf("actions: %d", a)
		}
	}
	if a := pipeline.PathPolicy(nil).Check(".github/ISSUE_TEMPLATE/bug.md"); a != tools.OffLimits {
		t.Errorf("without the opt-in: %d", a)
	}
}
