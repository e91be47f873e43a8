module example.com/sandboxprobe

go 1.22
