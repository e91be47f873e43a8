package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrNotStore is wrapped when a copy is not a readable selfcode store.
var ErrNotStore = errors.New("not a selfcode store")

// Write streams a consistent snapshot of db to w from one read transaction,
// so writers carry on while it runs. setSize, when not nil, is called with
// the snapshot's exact size before the first byte is written (an HTTP
// handler sets Content-Length with it).
func Write(ctx context.Context, db *bolt.DB, w io.Writer, setSize func(int64)) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := db.View(func(tx *bolt.Tx) error {
		if setSize != nil {
			setSize(tx.Size())
		}
		var err error
		n, err = tx.WriteTo(ctxWriter{ctx: ctx, w: w})
		return err
	})
	if err != nil {
		return n, fmt.Errorf("write store snapshot: %w", err)
	}
	return n, nil
}

// ctxWriter stops a long copy once the caller has gone away.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// Summary describes a checked copy.
type Summary struct {
	Path  string
	Bytes int64
	// Keys is the number of keys in each top-level bucket, e.g. "jobs".
	Keys map[string]int
	// Schema is the store's schema version (meta/schema).
	Schema string
}

// Buckets lists the bucket names of s in order.
func (s Summary) Buckets() []string {
	out := make([]string, 0, len(s.Keys))
	for k := range s.Keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Verify opens path read-only as bbolt, runs bbolt's consistency check over
// every page and reports what it holds. A file that opens but lacks the
// store's meta/schema entry wraps ErrNotStore.
func Verify(ctx context.Context, path string) (Summary, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Summary{}, fmt.Errorf("check backup: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return Summary{}, fmt.Errorf("open backup %s as bbolt: %w: %w", path, ErrNotStore, err)
	}
	defer db.Close()
	sum := Summary{Path: path, Bytes: st.Size(), Keys: map[string]int{}}
	err = db.View(func(tx *bolt.Tx) error {
		for cerr := range tx.Check() {
			if cerr != nil {
				return fmt.Errorf("consistency check: %w", cerr)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			sum.Keys[string(name)] = b.Stats().KeyN
			if string(name) == "meta" {
				sum.Schema = string(b.Get([]byte("schema")))
			}
			return nil
		})
	})
	if err != nil {
		return Summary{}, fmt.Errorf("check backup %s: %w", path, err)
	}
	if sum.Schema == "" {
		return Summary{}, fmt.Errorf("check backup %s: %w (no meta/schema)", path, ErrNotStore)
	}
	return sum, nil
}

// SaveOptions says where a copy comes from and where it goes.
type SaveOptions struct {
	// URL of the running server's backup endpoint, e.g.
	// http://127.0.0.1:9090/api/backup.
	URL string
	// Client makes the request; a client without a total timeout is right
	// for large stores (ctx bounds the call). Default http.DefaultClient.
	Client *http.Client
	// File is the destination. It is written to a temporary file with mode
	// 0600 beside it, checked with Verify, and only then renamed into place.
	File string
	// Force replaces an existing File.
	Force bool
}

// Download saves the server's snapshot to o.File and verifies it.
func Download(ctx context.Context, o SaveOptions) (Summary, error) {
	client := o.Client
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.URL, nil)
	if err != nil {
		return Summary{}, fmt.Errorf("backup request: %w", err)
	}
	if err := checkTarget(o.File, o.Force); err != nil {
		return Summary{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Summary{}, fmt.Errorf("download backup from %s: %w", o.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return Summary{}, fmt.Errorf("download backup from %s: %s: %s", o.URL, resp.Status, msg)
	}
	want := int64(-1)
	if v := resp.Header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			want = n
		}
	}
	return save(ctx, o.File, o.Force, want, resp.Body)
}

// Copy makes a backup straight from a store file that no server has open
// (bbolt locks the file, so this waits at most lockWait for a running
// server's lock and then fails).
func Copy(ctx context.Context, dbPath, file string, force bool, lockWait time.Duration) (Summary, error) {
	if err := checkTarget(file, force); err != nil {
		return Summary{}, err
	}
	db, err := bolt.Open(dbPath, 0o600, &bolt.Options{ReadOnly: true, Timeout: lockWait})
	if err != nil {
		return Summary{}, fmt.Errorf("open %s (is the server running? then back up through it): %w", dbPath, err)
	}
	defer db.Close()
	pr, pw := io.Pipe()
	go func() {
		_, err := Write(ctx, db, pw, nil)
		pw.CloseWithError(err)
	}()
	sum, err := save(ctx, file, force, -1, pr)
	pr.Close()
	return sum, err
}

func checkTarget(file string, force bool) error {
	if file == "" {
		return errors.New("backup file name is empty")
	}
	if _, err := os.Lstat(file); err == nil && !force {
		return fmt.Errorf("backup file %s already exists (use --force to replace it)", file)
	}
	return nil
}

// save writes r to a 0600 temporary file beside file, checks it and renames
// it into place; on any failure nothing is left behind.
func save(ctx context.Context, file string, force bool, want int64, r io.Reader) (Summary, error) {
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".part-*")
	if err != nil {
		return Summary{}, fmt.Errorf("create backup file: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return Summary{}, fmt.Errorf("restrict backup file: %w", err)
	}
	n, err := io.Copy(tmp, ctxReader{ctx: ctx, r: r})
	if err != nil {
		return Summary{}, fmt.Errorf("write backup: %w", err)
	}
	if want >= 0 && n != want {
		return Summary{}, fmt.Errorf("write backup: got %d bytes, the server announced %d", n, want)
	}
	if err := tmp.Sync(); err != nil {
		return Summary{}, fmt.Errorf("sync backup: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return Summary{}, fmt.Errorf("close backup: %w", err)
	}
	sum, err := Verify(ctx, tmp.Name())
	if err != nil {
		return Summary{}, err
	}
	if !force {
		if _, err := os.Lstat(file); err == nil {
			return Summary{}, fmt.Errorf("backup file %s appeared while downloading; not replacing it", file)
		}
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return Summary{}, fmt.Errorf("move backup into place: %w", err)
	}
	ok = true
	sum.Path = file
	return sum, nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
