package vetfail

import (
	"fmt"
	"testing"
)

func TestPrintf(t *testing.T) {
	fmt.Printf("%d\n", "not a number")
}
