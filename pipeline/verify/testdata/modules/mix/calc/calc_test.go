package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d, want 5", got)
	}
}

func TestSub(t *testing.T) {
	t.Log("checking subtraction")
	if got := Sub(5, 3); got != 2 {
		t.Errorf("Sub(5, 3) = %d, want 2", got)
	}
}

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a, b, w int
	}{{"small numbers", 1, 1, 2}, {"negative", -1, -1, -2}, {"wrong", 1, 2, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Add(tc.a, tc.b); got != tc.w {
				t.Fatalf("Add(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.w)
			}
		})
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("needs a database")
}
