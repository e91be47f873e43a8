//go:build !selfcode_testhooks

package main

import (
	"log/slog"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/image"
	"github.com/selfcode/selfcode/app/server"
)

// testParts exists only in binaries built with -tags selfcode_testhooks;
// a release binary always builds its parts from the configuration.
func testParts(*config.Config, *slog.Logger) *server.Parts { return nil }

// testImage exists only in binaries built with -tags selfcode_testhooks; a
// release binary always builds the sandbox image from the recipe it carries.
func testImage(*image.Options) {}
