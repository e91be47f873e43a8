// Command app runs the sample.
package main

import (
	"context"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	_ = ctx
	_ = args
	return nil
}
