// Package sandboxprobe is a tiny module whose tests run inside the sandbox.
package sandboxprobe

// Sum adds the numbers.
func Sum(xs ...int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}
