// Package config loads selfcode's server configuration from struct-tag
// defaults, an optional YAML file and the environment, validates it, and
// renders it without ever revealing its secrets.
package config
