package broken

func Broken() int { return undefinedThing }
