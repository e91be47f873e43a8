package main

import "example.com/layers/c"

func main() { println(c.C()) }
