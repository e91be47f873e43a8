//go:build ignore

package main

import "example.com/layers/a"

func main() { a.A() }
