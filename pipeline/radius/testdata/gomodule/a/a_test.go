package a

import "example.com/layers/e"

var _ = e.E
