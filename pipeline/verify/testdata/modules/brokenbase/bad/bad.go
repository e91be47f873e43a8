package bad

import "example.com/broken/ok"

func Bad() int {
	if ok.OK() {
		return 1
	}
	return 0
}

func Worse() string { return "42" }
