package d

import alias "example.com/layers/a"

func D() int { return alias.A() }
