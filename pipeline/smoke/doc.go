// Package smoke is the smoke stage of verification: build the repository's
// own image, start a throwaway ("shadow") container of it, check its health
// endpoint and a few requests, read its logs and remove it all. Each step
// becomes a verification command result, so the one truth rule
// (pipeline/verify) compares it with the base commit like any command. The
// Docker side is an Engine (app/sandbox implements it).
package smoke
