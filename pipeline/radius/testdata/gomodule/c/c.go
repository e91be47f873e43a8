package c

import "example.com/layers/b"

func C() string { return b.B() }
