module example.com/y
