package main

import (
	"fmt"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/selfcode/selfcode/app/backup"
)

func backupCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "backup FILE",
		Short: "Save a consistent copy of the job store (selfcode.db) while the server runs",
		Long: `backup downloads a consistent snapshot of the running server's store through
its admin API (GET /api/backup, one bbolt read transaction: the server keeps
serving and writing meanwhile), writes it to FILE with mode 0600 and checks
that the copy opens as a bbolt store and passes bbolt's consistency check.

With --db it copies a store file that no server has open instead (bbolt locks
the file while the server runs).

Restore: stop the server, replace <data dir>/selfcode.db with the copy, start
the server. See docs/operations.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			force, _ := cmd.Flags().GetBool("force")
			db, _ := cmd.Flags().GetString("db")
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			var sum backup.Summary
			var err error
			if db != "" {
				sum, err = backup.Copy(ctx, db, args[0], force, 2*time.Second)
			} else {
				var base string
				if base, err = adminURL(cmd); err != nil {
					return err
				}
				// No total timeout: a large store takes as long as it takes;
				// the dial and the first byte are bounded.
				client := &http.Client{Transport: &http.Transport{
					Proxy: nil, ResponseHeaderTimeout: time.Minute, DisableCompression: true,
				}}
				sum, err = backup.Download(ctx, backup.SaveOptions{URL: base + "/api/backup", Client: client, File: args[0], Force: force})
			}
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Backed up %d jobs (%d bytes, store schema %s) to %s (mode 0600); bbolt consistency check passed.\n",
				sum.Keys["jobs"], sum.Bytes, sum.Schema, sum.Path)
			return nil
		},
	}
	c.Flags().String("admin-url", "", "admin API base URL (default: from SELFCODE_ADMIN_ADDR)")
	c.Flags().Bool("force", false, "replace FILE if it exists")
	c.Flags().String("db", "", "copy this store file directly (only when no server has it open)")
	return c
}
