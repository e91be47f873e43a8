package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

func (d *Doctor) checkDataDir(context.Context) Result {
	dir := d.cfg.DataDir
	abs, err := filepath.Abs(dir)
	if err == nil {
		dir = abs
	}
	fixWritable := fmt.Sprintf("make %s a directory the user running selfcode (uid %d) can write, or set SELFCODE_DATA_DIR to one", dir, os.Getuid())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail("cannot create "+dir+": "+err.Error(), fixWritable)
	}
	if err := probeWrite(dir); err != nil {
		return fail("cannot write in "+dir+": "+err.Error(), fixWritable)
	}
	free, err := freeBytes(dir)
	if err != nil {
		return ok("%s is writable (free space unknown: %v)", dir, err)
	}
	detail := fmt.Sprintf("%s is writable, %s free", dir, mib(free))
	fixSpace := fmt.Sprintf("free space on the file system of %s (git mirrors, workspaces and the store live there), or set SELFCODE_DATA_DIR to a larger one", dir)
	switch {
	case free < d.o.MinFreeBytes:
		return fail(fmt.Sprintf("%s; at least %s is needed", detail, mib(d.o.MinFreeBytes)), fixSpace)
	case free < 5*d.o.MinFreeBytes:
		return warn(fmt.Sprintf("%s; less than %s", detail, mib(5*d.o.MinFreeBytes)), fixSpace)
	}
	return ok("%s", detail)
}

// probeWrite creates, syncs and removes a file in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".selfcode-doctor-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString("selfcode doctor\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (d *Doctor) checkWebhookSecret(context.Context) Result {
	n := len(d.cfg.WebhookSecret)
	switch {
	case n == 0:
		return fail("SELFCODE_WEBHOOK_SECRET is not set: serve refuses to start without it",
			"set SELFCODE_WEBHOOK_SECRET to the App's webhook secret (`selfcode setup` writes it into selfcode-app.yml; pass that with --config)")
	case n < 16:
		return warn(fmt.Sprintf("set, but only %d characters", n),
			"use a long random secret (e.g. `openssl rand -hex 32`), set it on the App's settings page and in SELFCODE_WEBHOOK_SECRET")
	}
	return ok("set (%d characters)", n)
}
