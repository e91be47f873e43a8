// Package localrun runs the pipeline once on a local git checkout, with no
// GitHub: a scratch clone at the base commit, the pipeline, then the result
// fetched back into the repository as a new branch selfcode/local-<id>. The
// user's working tree is never touched.
package localrun
