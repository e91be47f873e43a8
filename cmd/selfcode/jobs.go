package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// adminURL is where the admin API of the server this config describes listens.
func adminURL(cmd *cobra.Command) (string, error) {
	if u, _ := cmd.Flags().GetString("admin-url"); u != "" {
		return strings.TrimRight(u, "/"), nil
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		return "", err
	}
	host, port, err := net.SplitHostPort(cfg.AdminAddr)
	if err != nil {
		return "", &exitError{code: 2, err: fmt.Errorf("SELFCODE_ADMIN_ADDR %q: %w", cfg.AdminAddr, err)}
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

func apiCall(cmd *cobra.Command, method, path string, out any) error {
	base, err := adminURL(cmd)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(cmd.Context(), method, base+path, nil)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("admin API at %s: %w", base, err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode >= 300 {
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		if e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
		}
		return &exitError{code: 1, err: fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, e.Error)}
	}
	return json.Unmarshal(body, out)
}

func jobsCmd() *cobra.Command {
	c := &cobra.Command{Use: "jobs", Short: "List, show and cancel jobs of a running server (admin API)"}
	c.PersistentFlags().String("admin-url", "", "admin API base URL (default: from SELFCODE_ADMIN_ADDR)")
	c.PersistentFlags().Bool("json", false, "print raw JSON")

	list := &cobra.Command{
		Use: "list", Short: "List jobs, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if s, _ := cmd.Flags().GetString("state"); s != "" {
				q.Set("state", s)
			}
			if n, _ := cmd.Flags().GetInt("limit"); n > 0 {
				q.Set("limit", fmt.Sprint(n))
			}
			if c, _ := cmd.Flags().GetString("cursor"); c != "" {
				q.Set("cursor", c)
			}
			var page struct {
				Jobs []map[string]any `json:"jobs"`
				Next string           `json:"next"`
			}
			if err := apiCall(cmd, http.MethodGet, "/api/jobs?"+q.Encode(), &page); err != nil {
				return err
			}
			if raw, _ := cmd.Flags().GetBool("json"); raw {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(page)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSTATE\tOUTCOME\tREPOSITORY\tISSUE\tCREATED")
			for _, j := range page.Jobs {
				fmt.Fprintf(w, "%v\t%v\t%v\t%v\t#%v\t%v\n", j["id"], j["state"], j["outcome"], j["repository"], j["issue"], j["created_at"])
			}
			w.Flush()
			if page.Next != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "more: --cursor %s\n", page.Next)
			}
			return nil
		},
	}
	list.Flags().String("state", "", "only jobs in this state")
	list.Flags().Int("limit", 0, "page size (default 100, at most 1000)")
	list.Flags().String("cursor", "", "continue after this page cursor")

	show := &cobra.Command{
		Use: "show ID", Short: "Show one job with its stages and artifacts", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var j map[string]any
			if err := apiCall(cmd, http.MethodGet, "/api/jobs/"+url.PathEscape(args[0]), &j); err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(j)
		},
	}
	cancel := &cobra.Command{
		Use: "cancel ID", Short: "Cancel a queued, scheduled or running job", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var j map[string]any
			if err := apiCall(cmd, http.MethodPost, "/api/jobs/"+url.PathEscape(args[0])+"/cancel", &j); err != nil {
				return err
			}
			state := j["state"]
			if j["cancel_requested"] == true {
				state = "cancel requested (running)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%v: %v\n", j["id"], state)
			return nil
		},
	}
	c.AddCommand(list, show, cancel)
	return c
}
