module example.com/mix

go 1.22
