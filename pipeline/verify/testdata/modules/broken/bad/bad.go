package bad

import "example.com/broken/ok"

func Bad() int {
	return undefinedThing + ok.Missing()
}

func Worse() string { return 42 }
