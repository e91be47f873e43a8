package pipeline

import "github.com/selfcode/selfcode/pipeline/repoconfig"

// BaselineHash is the Config of the baseline cache's key of the checkout
// at dir verified with cfg, its smoke stage (if any) included: what a job
// or a check keys its base by.
func BaselineHash(cfg *repoconfig.Config, dir string) string {
	return baselineHash(cfg, cfg.SetupSteps(dir), verifyCommands(cfg, dir))
}
