package setup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/selfcode/selfcode/app/github"
)

// credentialsFile is the YAML written by setup. Its keys are server config
// keys (app/config), so the file is a valid `selfcode serve --config` file.
type credentialsFile struct {
	AppID         int64  `yaml:"app_id"`
	WebhookSecret string `yaml:"webhook_secret"`
	PrivateKey    string `yaml:"private_key"`
	GitHubAPIURL  string `yaml:"github_api_url,omitempty"`
}

// WriteOptions says where and how credentials are written.
type WriteOptions struct {
	// File is the destination path.
	File string
	// Force replaces an existing file; without it an existing file is an
	// error (it may hold another app's key).
	Force bool
	// APIURL is recorded as github_api_url when it is not the default
	// (GitHub Enterprise Server).
	APIURL string
	// Now stamps the header comment; default time.Now.
	Now func() time.Time
}

// CheckWritable fails early when File exists (without Force) or its
// directory cannot take a new file, so the one-time code is not spent on a
// file that cannot be written.
func CheckWritable(o WriteOptions) error {
	if o.File == "" {
		return errors.New("credentials file name is empty")
	}
	if _, err := os.Lstat(o.File); err == nil && !o.Force {
		return fmt.Errorf("%s already exists; choose another --out or pass --force to replace it", o.File)
	}
	f, err := os.CreateTemp(filepath.Dir(o.File), ".selfcode-setup-check-*")
	if err != nil {
		return fmt.Errorf("cannot write credentials next to %s: %w", o.File, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// WriteCredentials writes the app id, webhook secret and private key as a
// YAML config file with mode 0600. The file appears complete or not at all
// (written beside it, synced, then moved into place); without Force an
// existing file is never replaced.
func WriteCredentials(c github.ManifestCredentials, o WriteOptions) error {
	if c.ID == 0 || c.PEM == "" {
		return errors.New("the credentials GitHub returned lack the app id or the private key")
	}
	if err := CheckWritable(o); err != nil {
		return err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	body, err := yaml.Marshal(credentialsFile{AppID: c.ID, WebhookSecret: c.WebhookSecret, PrivateKey: c.PEM,
		GitHubAPIURL: apiURLToRecord(o.APIURL)})
	if err != nil {
		return fmt.Errorf("encode credentials: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# selfcode GitHub App credentials, written by `selfcode setup` at %s.\n", now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "# App %q (slug %s, id %d) owned by %s: %s\n", comment(c.Name), comment(c.Slug), c.ID, comment(c.Owner), comment(c.HTMLURL))
	b.WriteString("# Secret: keep this file private (mode 0600) and out of git.\n")
	b.WriteString("# Use it with: selfcode serve --config <this file>  (other settings may be added here or set in the environment)\n")
	b.Write(body)

	dir := filepath.Dir(o.File)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(o.File)+".part-*")
	if err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	if _, err := tmp.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	if o.Force {
		err = os.Rename(tmp.Name(), o.File)
	} else {
		// A hard link fails when the name exists: no race with another
		// writer. Where links are unsupported, check and rename.
		err = os.Link(tmp.Name(), o.File)
		switch {
		case err == nil:
			err = os.Remove(tmp.Name())
		case errors.Is(err, fs.ErrExist):
		default:
			if _, serr := os.Lstat(o.File); serr == nil {
				err = fmt.Errorf("%s appeared meanwhile: %w", o.File, fs.ErrExist)
			} else {
				err = os.Rename(tmp.Name(), o.File)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("write credentials to %s: %w", o.File, err)
	}
	done = true
	return nil
}

func apiURLToRecord(u string) string {
	if u == "" || strings.TrimRight(u, "/") == "https://api.github.com" {
		return ""
	}
	return u
}

// comment makes a value from GitHub safe inside a one-line YAML comment.
func comment(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
