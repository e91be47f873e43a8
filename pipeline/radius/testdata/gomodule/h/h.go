//go:build linux

package h

import "example.com/layers/a"

var H = a.A
