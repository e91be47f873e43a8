package strs

import "strings"

func Shout(s string) string { return strings.ToUpper(s) + "?" }

func First(s []string) string { return s[0] }
