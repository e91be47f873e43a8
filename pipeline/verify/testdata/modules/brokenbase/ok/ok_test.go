package ok

import "testing"

func TestOK(t *testing.T) {
	if !OK() {
		t.Fatal("not ok")
	}
}
