package gen

import "example.com/layers/c"

var G = c.C
