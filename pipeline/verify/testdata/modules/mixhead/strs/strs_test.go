package strs

import (
	"fmt"
	"testing"
)

func TestShout(t *testing.T) {
	fmt.Println("printing to stdout from a test")
	if got := Shout("hi"); got != "HI!" {
		t.Errorf("Shout = %q", got)
	}
}

func TestFirstPanics(t *testing.T) {
	if got := First(nil); got != "" {
		t.Errorf("First(nil) = %q", got)
	}
}

func TestAfterPanic(t *testing.T) {}
