//go:build !unix

package doctor

import "errors"

func freeBytes(string) (int64, error) { return 0, errors.New("not measured on this system") }
