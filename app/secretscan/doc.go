// Package secretscan finds credentials in the lines a change adds — private
// key blocks, GitHub tokens, cloud and SaaS keys, generic high-entropy
// assignments — with gitleaks' maintained rule set, so that selfcode never
// pushes one. A finding names the file, line and rule, never the value.
package secretscan
