package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 2); got != 4 {
		t.Errorf("Add(2, 2) = %d, want 4", got)
	}
}

func TestSub(t *testing.T) {}

func TestTable(t *testing.T) {
	for _, name := range []string{"one", "two"} {
		t.Run(name, func(t *testing.T) {
			if name == "two" && Add(1, 1) != 2 {
				t.Fatal("two is wrong")
			}
		})
	}
}

func TestSkip(t *testing.T) { t.Skip("later") }
