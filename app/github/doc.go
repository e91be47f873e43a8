// Package github is selfcode's GitHub API client: App and installation
// authentication, a retrying, rate-limit-aware and per-repository-serialising
// transport, the handful of REST calls selfcode makes, and a cached permission check.
package github
