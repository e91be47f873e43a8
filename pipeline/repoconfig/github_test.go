package repoconfig

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Everything under .github/ is off-limits to the model unless
// paths.github_opt_in names it, and an opt-in is explicit and narrow: it
// names a file or folder directly under .github/ literally, never
// workflows or actions in any case, never through a wildcard that could
// reach them. The parser and the JSON Schema agree on every entry.
func TestGitHubOptIn(t *testing.T) {
	t.Parallel()
	validate := schemaValidator(t)
	good := []string{
		".github/ISSUE_TEMPLATE/**",
		".github/ISSUE_TEMPLATE/bug.md",
		".github/CODEOWNERS",
		".github/dependabot.yml",
		".github/PULL_REQUEST_TEMPLATE.md",
		".github/workflows-docs/**", // another folder, which CI does not run
		".github/copilot-instructions.md",
	}
	bad := map[string]string{
		".github/**":               "without wildcards",
		".github/*":                "without wildcards",
		".github/*.md":             "without wildcards",
		".github/*/x.yml":          "without wildcards",
		".github/{workflows,x}/**": "without wildcards",
		".github/[w]orkflows/**":   "without wildcards",
		".github/w?rkflows/**":     "without wildcards",
		".github/workflows/ci.yml": "can never be opened",
		".github/workflows":        "can never be opened",
		".github/Workflows/**":     "can never be opened",
		".github/ACTIONS/x/**":     "can never be opened",
		".github/actions":          "can never be opened",
		"**":                       "must start with .github/",
		".GitHub/CODEOWNERS":       "must start with .github/",
		"src/**":                   "must start with .github/",
		".github":                  "must start with .github/",
		".github/":                 "without wildcards",
		".github/../x":             "must not contain ..",
		"/.github/CODEOWNERS":      "relative to the repository root",
	}
	for _, g := range good {
		y := "paths: {github_opt_in: ['" + g + "']}"
		c, err := Parse([]byte(y))
		if err != nil || !slices.Equal(c.Paths.GitHubOptIn, []string{g}) {
			t.Errorf("%s: parsed %v, %v", g, c, err)
		}
		if err := validate(y); err != nil {
			t.Errorf("the schema refuses %s: %v", g, err)
		}
	}
	for g, want := range bad {
		y := "paths: {github_opt_in: ['" + g + "']}"
		_, err := Parse([]byte(y))
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "paths.github_opt_in[0]") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error on paths.github_opt_in[0] saying %q", g, err, want)
		}
		if err := validate(y); err == nil {
			t.Errorf("the schema accepts %s", g)
		}
	}
	// Not a list.
	if _, err := Parse([]byte("paths: {github_opt_in: .github/CODEOWNERS}")); err == nil {
		t.Error("a string instead of a list was accepted")
	}
	if c, _ := Parse(nil); len(c.Paths.GitHubOptIn) != 0 {
		t.Errorf("opted in by default: %v", c.Paths.GitHubOptIn)
	}
}
