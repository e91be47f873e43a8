// Package tripwire gives tests an executable that records every time it
// runs — a git hook, driver, fsmonitor or a go command that must never run
// on the host — so a test can show that nothing of a repository did.
package tripwire
