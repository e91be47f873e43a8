// Package engine adapts the pipeline to the rest of selfcode: it runs the
// pipeline as the job runner's Engine, turning its output into the report
// the templates render, and runs the pipeline's sandbox sessions in Docker
// containers from app/sandbox.
package engine
