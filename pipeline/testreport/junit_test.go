package testreport

import (
	"os"
	"testing"
)

func TestParseJUnit(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/pytest/junit.xml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ParseJUnit(data)
	if err != nil || rep == nil {
		t.Fatalf("ParseJUnit: %v, %v", rep, err)
	}
	want := map[ID]Status{
		{"test_calc", "test_add"}:             Fail,
		{"test_calc", "test_sub"}:             Pass,
		{"test_calc", "test_param[1]"}:        Pass,
		{"test_calc", "test_param[2]"}:        Pass,
		{"test_calc", "test_skipped"}:         Skip,
		{"test_calc.TestGroup", "test_inner"}: Pass,
		{"test_calc.TestCase", "test_bad"}:    Fail,
		{"test_calc.TestCase", "test_later"}:  Skip,
		{"test_calc.TestCase", "test_ok"}:     Pass,
	}
	checkTests(t, rep, want)
	if out := rep.Output[ID{"test_calc", "test_add"}]; !containsLine(out, "AssertionError: two and two") {
		t.Errorf("output of test_add: %q", out)
	}

	data, err = os.ReadFile("testdata/pytest/broken-junit.xml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err = ParseJUnit(data)
	if err != nil || rep == nil {
		t.Fatalf("broken: %v, %v", rep, err)
	}
	if rep.Len() != 0 || !rep.IsBroken("test_broken") || len(rep.SuiteFailures()) != 1 || !containsLine(rep.Errors, "No module named 'does_not_exist'") {
		t.Errorf("broken report: tests %v broken %v errors %q", rep.Tests, rep.Broken, rep.Errors)
	}

	for _, empty := range []string{`<?xml version="1.0"?><testsuites></testsuites>`, `<testsuite name="x" tests="0"/>`} {
		if rep, err := ParseJUnit([]byte(empty)); rep != nil || err != nil {
			t.Errorf("%s: %v, %v; want nil, nil", empty, rep, err)
		}
	}
	if _, err := ParseJUnit([]byte("not xml")); err == nil {
		t.Error("not xml: want an error")
	}
}

func FuzzParseJUnit(f *testing.F) {
	for _, name := range []string{"testdata/pytest/junit.xml", "testdata/pytest/broken-junit.xml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, _ := ParseJUnit(data)
		checkWellFormed(t, rep)
	})
}
