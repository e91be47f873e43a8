// Package billing computes invoices.
package billing

// Invoice is a bill.
type Invoice struct {
	Lines    []Line
	Currency string
}

// Line is one invoice line.
type Line struct {
	Amount int64
	Text   string
}

// Total sums the lines.
func Total(inv Invoice) int64 {
	var t int64
	for _, l := range inv.Lines {
		t += l.Amount
	}
	return t
}
