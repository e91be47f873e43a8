package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode"
	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/app/doctor"
)

func doctorCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "doctor [--fast] [--manifest app.yml] [--json]",
		Short: "Check what selfcode needs on this machine, one line each, with a fix for each failure",
		Long: `doctor checks the Docker engine (version, runtime, and that a sandbox container
really has no network and the configured memory and pids limits), the sandbox
image (present, its toolchains answer), the data directory (writable, free
space), the webhook secret, the GitHub App (the key parses, GitHub accepts its
JWT, its installations, permissions and events as app.yml asks), the model
endpoint (reachable, the configured models exist, one tiny call) and the public
URL (it reaches this machine). It exits 1 when a check fails, 0 otherwise
(warnings included). --fast runs only the local checks serve runs at start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			fast, _ := cmd.Flags().GetBool("fast")
			asJSON, _ := cmd.Flags().GetBool("json")
			path, _ := cmd.Flags().GetString("manifest")
			manifest, err := readManifest(path)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			d := doctor.New(doctor.Options{Config: cfg, Manifest: manifest})
			defer d.Close()
			results := d.Run(ctx, fast)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(results); err != nil {
					return err
				}
			} else {
				doctor.Write(cmd.OutOrStdout(), results)
			}
			if doctor.Failed(results) {
				return &exitError{code: 1, err: errors.New("a check failed")}
			}
			return nil
		},
	}
	c.Flags().Bool("fast", false, "only the local checks (engine, image present, data directory, webhook secret, App key)")
	c.Flags().String("manifest", "", "the App manifest whose permissions and events the App must have; default ./app.yml when there is one, else the copy built into selfcode")
	c.Flags().Bool("json", false, "print the results as JSON")
	return c
}

// startupChecks runs doctor's fast checks and logs each line: what serve
// says about the machine before it starts.
func startupChecks(ctx context.Context, cfg *config.Config, log *slog.Logger) {
	d := doctor.New(doctor.Options{Config: cfg, Manifest: selfcode.AppManifest(), Logger: log})
	defer d.Close()
	doctor.Log(log, d.Run(ctx, true))
}
