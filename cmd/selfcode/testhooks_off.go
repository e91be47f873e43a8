//go:build !selfcode_testhooks

package main

import (
	"log/slog"

	"github.com/selfcode/selfcode/app/config"
)

// testDeps exists only in binaries built with -tags selfcode_testhooks.
func testDeps(*config.Config, *slog.Logger) (depsFunc, bool) { return nil, false }
