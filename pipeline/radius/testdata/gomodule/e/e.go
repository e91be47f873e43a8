package e

var E = 1
