module example.com/layers

// A toolchain no machine here has: any go command would try to download it.
go 1.99

toolchain go1.99.1
