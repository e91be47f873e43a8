package bad

import "testing"

func TestBad(t *testing.T) { _ = Bad() }
