package util

import "strings"

// Greet says hello.
func Greet(name string) string {
	return "hello, " + strings.TrimSpace(name)
}

// Shout upper-cases s.
func Shout(s string) string {
	return strings.ToUpper(s)
}

// Whisper lower-cases s.
func Whisper(s string) string {
	return strings.ToLower(s)
}
