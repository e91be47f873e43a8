package b

import (
	"fmt"

	"example.com/layers/a"
)

func B() string { return fmt.Sprint(a.A()) }
