package eval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/selfcode/selfcode/pipeline/testreport"
	"github.com/selfcode/selfcode/pipeline/verify"
)

// Grade is a task's result judged by its held-back tests.
type Grade struct {
	// Resolved: at least one held-back test that failed on the base passes
	// on the result, and nothing that passed on the base fails there.
	Resolved bool
	// Fixed are the held-back tests that failed on the base and pass on
	// the result.
	Fixed []string
	// Broken are the tests that passed on the base and do not pass on the
	// result (failing, skipped, gone, or not run) — unless the held-back
	// changes removed or renamed them — and commands naming no tests that
	// passed on the base and fail on the result for a new reason.
	Broken []string
}

// grade judges result (the model's change with the held-back tests
// applied) test by test, within the command that ran each test; of a test
// and its subtests only the subtests count.
//
// Two runs of the base say what was there: withTests (the held-back tests
// applied) for every test it ran, and base (the base as it is: the job's
// own baseline) for the tests withTests could not run — a package that the
// held-back tests stop building, a test file that no longer imports — so
// a test that passed before the commit still counts as passing on the
// base when the held-back tests hide it. A held-back test failing on the
// base is one withTests ran and saw fail (new there, or changed), or, in
// a suite withTests could not run, a test base did not have whose name a
// held-back file holds; a test that failed on the base as it is is never
// one. files are the held-back files, before and after the commit: they
// tell a test the commit removed or renamed (absent from the result,
// rightly) from one the model broke.
func grade(base, withTests, result verify.Run, files heldBackFiles) Grade {
	var g Grade
	for _, k := range commandKeys(base, withTests, result) {
		name := k.name
		a, b, r := command(base, k), command(withTests, k), command(result, k)
		for _, id := range leafTests(a, b, r) {
			as, _ := status(a, id)
			bs, bKnown := status(b, id)
			rs, _ := status(r, id)
			var heldBack, passed bool
			switch {
			case explicit(a, id) && as == testreport.Fail:
				// Failing on the base already: neither held back nor passing.
			case explicit(b, id):
				heldBack, passed = bs == testreport.Fail, bs == testreport.Pass
			case bKnown && bs == testreport.Fail && !explicit(a, id):
				// Its suite did not run with the held-back tests: it is one
				// of them when a held-back file names it (not a test the
				// model wrote).
				heldBack = files.names(id)
			default:
				passed = explicit(a, id) && as == testreport.Pass
			}
			switch {
			case heldBack && rs == testreport.Pass:
				g.Fixed = append(g.Fixed, label(name, id))
			case passed && rs != testreport.Pass && !(!explicit(r, id) && (dropped(b, id) || files.removed(id))):
				g.Broken = append(g.Broken, label(name, id))
			}
		}
		if !hasTests(a) && !hasTests(b) && !hasTests(r) && commandBroken(a, b, r) {
			g.Broken = append(g.Broken, "command "+name)
		}
	}
	g.Resolved = len(g.Fixed) > 0 && len(g.Broken) == 0
	return g
}

// commandBroken reports whether a command that names no tests (a build,
// a vet) passed on the base and fails on the result for a reason of the
// result's own: it passed with the held-back tests too, or it failed
// there (the held-back tests do not compile without the fix) and fails on
// the result with a complaint it did not have there.
func commandBroken(a, b, r *verify.CommandResult) bool {
	switch {
	case r != nil && r.Passed:
		return false
	case b != nil && b.Passed:
		return true
	case a == nil || !a.Passed || b == nil || r == nil:
		return false
	}
	cmp := verify.Compare(verify.Run{Commands: []verify.CommandResult{*b}}, verify.Run{Commands: []verify.CommandResult{*r}})
	return len(cmp.Regressions) > 0
}

// dropped reports whether the base with the held-back tests ran the
// test's suite to the end, passing, without the test: the held-back
// changes took it away.
func dropped(b *verify.CommandResult, id testreport.ID) bool {
	return b != nil && b.Tests != nil && !b.Tests.Partial && !explicit(b, id) && b.Tests.Suites[id.Suite] == testreport.Pass
}

// commandKey names a command across runs as verification matches them:
// by name, the nth of that name with the nth.
type commandKey struct {
	name string
	nth  int
}

// commandKeys are the commands of the runs, in order, once.
func commandKeys(runs ...verify.Run) []commandKey {
	var keys []commandKey
	for _, run := range runs {
		seen := map[string]int{}
		for _, c := range run.Commands {
			k := commandKey{c.Name, seen[c.Name]}
			seen[c.Name]++
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

func command(run verify.Run, k commandKey) *verify.CommandResult {
	n := 0
	for i := range run.Commands {
		if run.Commands[i].Name != k.name {
			continue
		}
		if n == k.nth {
			return &run.Commands[i]
		}
		n++
	}
	return nil
}

// leafTests are the tests any of the commands named, sorted, without the
// parents of subtests that are also named.
func leafTests(cmds ...*verify.CommandResult) []testreport.ID {
	var ids []testreport.ID
	for _, c := range cmds {
		if c == nil || c.Tests == nil {
			continue
		}
		for id := range c.Tests.Tests {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, testreport.Compare)
	ids = slices.Compact(ids)
	leaves := ids[:0:0]
	for i, id := range ids {
		if i+1 < len(ids) && id.IsAncestorOf(ids[i+1]) {
			continue // sorted: a parent's subtests follow it
		}
		leaves = append(leaves, id)
	}
	return leaves
}

// status is what the command says of a test: its own status; Fail when
// its suite does not build or failed, or the command did not finish; not
// known when the command does not name it.
func status(c *verify.CommandResult, id testreport.ID) (testreport.Status, bool) {
	if c == nil {
		return "", false
	}
	if c.Tests != nil {
		if st, ok := c.Tests.Tests[id]; ok {
			return st, true
		}
		if slices.Contains(c.Tests.Broken, id.Suite) || c.Tests.Suites[id.Suite] == testreport.Fail {
			return testreport.Fail, true
		}
	}
	if c.Skipped || c.Error != "" || c.Missing || c.TimedOut || c.OOMKilled || c.OutputStopped {
		return testreport.Fail, true
	}
	return "", false
}

// explicit reports whether the command named the test itself (it ran).
func explicit(c *verify.CommandResult, id testreport.ID) bool {
	if c == nil || c.Tests == nil {
		return false
	}
	_, ok := c.Tests.Tests[id]
	return ok
}

func hasTests(c *verify.CommandResult) bool { return c != nil && c.Tests != nil && c.Tests.Len() > 0 }

// label names a test for a person: "TestX (pkg)", after its command's
// name when that is not the test command everyone expects.
func label(command string, id testreport.ID) string {
	if command == "" || strings.EqualFold(command, "test") {
		return id.String()
	}
	return fmt.Sprintf("%s: %s", command, id)
}
