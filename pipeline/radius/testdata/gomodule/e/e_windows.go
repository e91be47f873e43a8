package e

import "example.com/layers/a"

var _ = a.A
