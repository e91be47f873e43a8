package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/selfcode/selfcode/app/config"
	"github.com/selfcode/selfcode/pipeline/repoconfig"
)

func configCmd() *cobra.Command {
	c := &cobra.Command{Use: "config", Short: "Check configuration files"}
	validate := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Validate a .selfcode.yml (default ./.selfcode.yml) or a server config file",
		Long: `validate checks a repository's .selfcode.yml or a server configuration file
(the YAML file of ` + "`selfcode serve --config`" + `) and reports every problem with
its line and key. Exit status: 0 valid, 2 invalid or unreadable.

Which kind FILE is: --server or --repo when given; else a file named
.selfcode.yml/.selfcode.yaml is a repository file, and otherwise the kind
whose keys the file uses. The JSON Schema of .selfcode.yml is printed by
` + "`selfcode config schema`" + ` (pipeline/repoconfig/selfcode.schema.json).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := ".selfcode.yml"
			if len(args) == 1 {
				file = args[0]
			}
			server, _ := cmd.Flags().GetBool("server")
			repo, _ := cmd.Flags().GetBool("repo")
			if server && repo {
				return &exitError{code: 2, err: errors.New("--server and --repo exclude each other")}
			}
			data, err := os.ReadFile(file)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("read %s: %w", file, err)}
			}
			if !server && !repo {
				server = looksLikeServerConfig(file, data)
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if server {
				return validateServer(out, errOut, file)
			}
			return validateRepo(out, errOut, file, data)
		},
	}
	validate.Flags().Bool("server", false, "FILE is a server config file (serve --config)")
	validate.Flags().Bool("repo", false, "FILE is a repository's .selfcode.yml")
	schema := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of .selfcode.yml",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(repoconfig.Schema())
			return err
		},
	}
	c.AddCommand(validate, schema)
	return c
}

// looksLikeServerConfig decides by name, then by which kind's keys the
// top-level mapping uses (enabled is in both and counts for neither).
func looksLikeServerConfig(file string, data []byte) bool {
	switch strings.ToLower(filepath.Base(file)) {
	case ".selfcode.yml", ".selfcode.yaml":
		return false
	}
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	serverKeys := map[string]bool{}
	for _, f := range config.Fields() {
		serverKeys[f.YAML] = true
	}
	repoKeys := map[string]bool{}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(repoconfig.Schema(), &schema) == nil {
		for k := range schema.Properties {
			repoKeys[k] = true
		}
	}
	s, r := 0, 0
	for k := range top {
		if serverKeys[k] && repoKeys[k] {
			continue
		}
		if serverKeys[k] {
			s++
		}
		if repoKeys[k] {
			r++
		}
	}
	return s > r
}

func validateServer(out, errOut io.Writer, file string) error {
	cfg, err := config.Load(config.LoadOptions{File: file})
	if err == nil && (cfg.PrivateKey != "" || cfg.PrivateKeyPath != "") {
		_, err = cfg.PrivateKeyPEM()
	}
	if err != nil {
		var fe *config.FieldError
		if errors.As(err, &fe) && fe.File == "" {
			err = fmt.Errorf("%s: %w", file, err)
		}
		fmt.Fprintln(errOut, err)
		return &exitError{code: 2, err: fmt.Errorf("%s: invalid server configuration", file)}
	}
	fmt.Fprintf(out, "%s: valid server configuration\n", file)
	if cfg.WebhookSecret == "" {
		fmt.Fprintln(out, "note: webhook_secret is not set here; serve needs it from SELFCODE_WEBHOOK_SECRET")
	}
	if cfg.AppID == 0 {
		fmt.Fprintln(out, "note: app_id is not set here; serve needs it from SELFCODE_APP_ID (or run `selfcode setup`)")
	}
	return nil
}

func validateRepo(out, errOut io.Writer, file string, data []byte) error {
	_, err := repoconfig.Parse(data)
	if err == nil {
		fmt.Fprintf(out, "%s: valid .selfcode.yml\n", file)
		return nil
	}
	var ve *repoconfig.ValidationError
	switch {
	case errors.As(err, &ve):
		for _, p := range ve.Problems {
			if p.Line > 0 {
				fmt.Fprintf(errOut, "%s line %d: %s: %s\n", file, p.Line, p.Key, p.Msg)
			} else {
				fmt.Fprintf(errOut, "%s: %s: %s\n", file, p.Key, p.Msg)
			}
		}
		return &exitError{code: 2, err: fmt.Errorf("%s: %d problem(s)", file, len(ve.Problems))}
	default:
		// Not YAML at all; the parser's message names the line.
		msg := strings.TrimPrefix(err.Error(), repoconfig.FileName+": ")
		fmt.Fprintf(errOut, "%s: %s\n", file, bytes.TrimSpace([]byte(msg)))
		return &exitError{code: 2, err: fmt.Errorf("%s: not valid YAML", file)}
	}
}
