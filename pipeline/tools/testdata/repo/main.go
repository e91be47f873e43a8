package main

import (
	"fmt"

	"example.com/sample/util"
)

func main() {
	fmt.Println(util.Greet("world"))
}
