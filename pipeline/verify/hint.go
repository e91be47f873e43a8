package verify

import (
	"fmt"
	"regexp"
	"strings"
)

// Patterns naming what a setup step could not fetch, per package manager.
var (
	// go: example.com/words@v1.0.0: reading …: 404 Not Found
	// go: example.com/words@v1.0.0: unrecognized import path …
	goModuleRE = regexp.MustCompile(`(?m)^(?:go: )?(?:downloading )?([a-zA-Z0-9][\w.-]*\.[a-z]{2,}(?:/[\w.~+-]+)*)@v[\w.+-]+: `)
	// missing go.sum entry for module providing package example.com/words
	goSumRE = regexp.MustCompile(`missing go\.sum entry for module providing package ([\w./~+-]+)`)
	// npm ERR! 404 Not Found - GET https://registry…/left-padx - Not found
	// npm error 404 Not Found - GET …
	npmPackageRE = regexp.MustCompile(`(?m)^npm (?:ERR!|error) 404 .*?GET \S+/(@?[\w.-]+(?:%2[fF][\w.-]+|/[\w.-]+)?)(?:/-/\S+)?(?:\s|$)`)
	npmNetworkRE = regexp.MustCompile(`(?m)^npm (?:ERR!|error) (?:code )?(?:ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH)`)
	// ERROR: No matching distribution found for requestz
	pipPackageRE = regexp.MustCompile(`(?m)(?:No matching distribution found for|Could not find a version that satisfies the requirement) ([\w.\[\]-]+)`)
	pipNetworkRE = regexp.MustCompile(`(?m)(?:Failed to establish a new connection|Temporary failure in name resolution|Network is unreachable)`)
)

// SetupHint reads a failed setup step's output and says what to configure:
// the module or package that could not be fetched when the output names
// one, else a general step.
func SetupHint(output string) string {
	if m := goSumRE.FindStringSubmatch(output); m != nil {
		return fmt.Sprintf("add a `setup:` step that can fetch `%s` (and commit its go.sum entry)", m[1])
	}
	if m := goModuleRE.FindStringSubmatch(output); m != nil {
		return fmt.Sprintf("add a `setup:` step that can fetch `%s` (check the module path and that the sandbox's setup network reaches its source)", m[1])
	}
	if m := npmPackageRE.FindStringSubmatch(output); m != nil {
		name := strings.ReplaceAll(strings.ReplaceAll(m[1], "%2f", "/"), "%2F", "/")
		return fmt.Sprintf("add a `setup:` step that can fetch the npm package `%s` (it is not in the registry the sandbox reaches)", name)
	}
	if npmNetworkRE.MatchString(output) {
		return "the setup step could not reach the npm registry: check the sandbox's setup network, or configure `setup:` to use a registry it can reach"
	}
	if m := pipPackageRE.FindStringSubmatch(output); m != nil {
		return fmt.Sprintf("add a `setup:` step that can fetch the Python package `%s` (it is not in the index the sandbox reaches)", m[1])
	}
	if pipNetworkRE.MatchString(output) {
		return "the setup step could not reach the package index: check the sandbox's setup network, or configure `setup:` to use an index it can reach"
	}
	return "fix the failing step, or configure `setup:` in .selfcode.yml with steps that prepare the repository"
}
