// Package configdoc renders docs/configuration.md from the server
// configuration's field table (config.Fields), so the reference cannot drift
// from the code; its test fails when the committed file is stale.
//
// Regenerate with:
//
//	go generate ./internal/configdoc
package configdoc

//go:generate go test -run TestConfigurationDoc -update
