package testreport

import (
	"regexp"
	"strings"
)

var (
	goResultRE   = regexp.MustCompile(`^(\s*)--- (PASS|FAIL|SKIP): (\S+) \(`)
	goRunRE      = regexp.MustCompile(`^=== (?:RUN|CONT|PAUSE|NAME)\s+(\S+)`)
	goPkgOKRE    = regexp.MustCompile(`^ok  \t(\S+)\t(.*)$`)
	goPkgFailRE  = regexp.MustCompile(`^FAIL\t(\S+)\t(.*)$`)
	goPkgBrokeRE = regexp.MustCompile(`^FAIL\t(\S+) \[(build failed|setup failed)\]`)
)

// ParseGoText reads the output of plain `go test` (with or without -v),
// also when make or a script runs it. Tests print before the package line
// that closes them, which names their Suite. Without -v only failing and
// skipped-with-output tests are printed: passing tests are then absent,
// not failed, and a package's "ok" line counts it as a passing suite.
// A package that does not build is Broken. nil when the output names no
// test and no package result.
func ParseGoText(output string) *Report {
	rep := New(FormatGoText)
	found := false
	type pendingTest struct {
		name string
		st   Status
	}
	var pending []pendingTest
	pendingOut := map[string][]string{}
	cur := ""
	closePkg := func(pkg string, st Status) {
		rep.Suites[pkg] = st
		for _, p := range pending {
			id := ID{Suite: pkg, Name: p.name}
			rep.Set(id, p.st)
			for _, l := range pendingOut[p.name] {
				rep.AddOutput(id, l)
			}
		}
		pending, pendingOut, cur = nil, map[string][]string{}, ""
	}
	for _, raw := range strings.Split(output, "\n") {
		line := strings.TrimRight(raw, "\r")
		switch {
		case goResultRE.MatchString(line):
			m := goResultRE.FindStringSubmatch(line)
			st := map[string]Status{"PASS": Pass, "FAIL": Fail, "SKIP": Skip}[m[2]]
			pending = append(pending, pendingTest{m[3], st})
			cur = m[3]
			found = true
		case goRunRE.MatchString(line):
			cur = goRunRE.FindStringSubmatch(line)[1]
		case goPkgBrokeRE.MatchString(line):
			pkg := goPkgBrokeRE.FindStringSubmatch(line)[1]
			rep.Broken = append(rep.Broken, pkg)
			closePkg(pkg, Fail)
			found = true
		case goPkgOKRE.MatchString(line):
			m := goPkgOKRE.FindStringSubmatch(line)
			st := Pass
			if strings.Contains(m[2], "[no tests to run]") {
				st = Skip
			}
			closePkg(m[1], st)
			found = true
		case goPkgFailRE.MatchString(line):
			closePkg(goPkgFailRE.FindStringSubmatch(line)[1], Fail)
			found = true
		case strings.HasPrefix(line, "    ") && cur != "":
			pendingOut[cur] = append(pendingOut[cur], strings.TrimSpace(line))
		case line == "FAIL" || line == "PASS" || line == "" || strings.HasPrefix(line, "?   \t"):
		default:
			rep.AddError(line)
		}
	}
	if !found {
		return nil
	}
	if len(pending) > 0 {
		// Tests printed with no package line after them: the run was cut
		// short, so what is absent is unknown.
		rep.Partial = true
		closePkg("", Fail)
		delete(rep.Suites, "")
	}
	return rep.finish()
}
