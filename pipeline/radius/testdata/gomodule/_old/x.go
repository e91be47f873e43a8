package old

import "example.com/layers/a"

var X = a.A
