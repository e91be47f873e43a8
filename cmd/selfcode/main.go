package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/gin-gonic/gin"
	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode/app/gctune"
)

// exitError carries a process exit status through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	gin.SetMode(gin.ReleaseMode)
	gctune.Apply()
	root := &cobra.Command{
		Use:           "selfcode",
		Short:         "A self-hosted GitHub App that turns /selfcode comments into verified pull requests",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("config", "", "YAML configuration file (keys as in the environment, lower case, without SELFCODE_)")
	root.AddCommand(serveCmd(), runCmd(), evalCmd(), demoCmd(), setupCmd(), jobsCmd(), cacheCmd(), imageCmd(), doctorCmd(), backupCmd(), configCmd(), versionCmd())
	if err := root.Execute(); err != nil {
		code := 2 // usage errors from cobra
		var e *exitError
		if errors.As(err, &e) {
			code = e.code
		}
		fmt.Fprintln(os.Stderr, "selfcode:", err)
		os.Exit(code)
	}
}
