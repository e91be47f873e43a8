package nothing

func Nothing() {}
