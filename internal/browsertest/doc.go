// Package browsertest starts headless Chromium (Debian's package) for tests,
// driven with chromedp and able to reach 127.0.0.1 only, and records what
// the pages requested and which scripts failed.
package browsertest
