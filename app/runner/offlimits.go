package runner

import (
	"fmt"
	"strings"

	"github.com/selfcode/selfcode/app/errs"
	"github.com/selfcode/selfcode/app/gitops"
	"github.com/selfcode/selfcode/pipeline"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
	"github.com/selfcode/selfcode/pipeline/tools"
)

// offLimits refuses a change that touches a path the model may never
// write (.git, .github unless opted in, .selfcode.yml): the tools refuse
// such writes, and this is the net under them before anything is
// committed or pushed.
func offLimits(files []gitops.FileChange, cfg *repoconfig.Config) error {
	policy := pipeline.PathPolicy(cfg)
	var bad []string
	for _, f := range files {
		if policy.Check(f.Path) == tools.OffLimits {
			bad = append(bad, "`"+f.Path+"`")
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return errs.E(errs.KindPermanent, "", fmt.Errorf("the change touches %s, off-limits to selfcode (.git, .github and .selfcode.yml); nothing was committed or pushed", strings.Join(bad, ", ")))
}
