// Package eval scores the pipeline and a model on a repository's own fixed
// bugs (`selfcode eval`, contract section 10): commits that change source
// and test files together become tasks whose base is the first parent and
// whose test changes are held back from the model; the pipeline runs as in
// `selfcode run`, then the held-back tests grade the result test by test.
package eval
