// Package shortlist shortens a list for a person to read: its first items
// and how many more there are; reports, the scope guard and the blast
// radius share it.
package shortlist

import "fmt"

// Abbreviate returns list when it has at most n items; otherwise its first
// n and "and K more" for the K left out. list itself is never changed.
func Abbreviate(list []string, n int) []string {
	n = max(n, 0)
	if len(list) <= n {
		return list
	}
	return append(append([]string(nil), list[:n]...), fmt.Sprintf("and %d more", len(list)-n))
}
