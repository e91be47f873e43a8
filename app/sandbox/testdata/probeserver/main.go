// Command probeserver is a shadow service for the smoke stage's tests: it
// reports on its own container (environment, routes, capabilities, whether
// the root is writable, what it can connect to). Built static on the host, it runs FROM scratch.
// It listens on :8080, or on $PROBE_LISTEN.
package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"
)

func main() {
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	http.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, os.Getenv("APP_ENV")) })
	http.HandleFunc("/route", func(w http.ResponseWriter, r *http.Request) { w.Write(read("/proc/net/route")) })
	http.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) { w.Write(read("/proc/self/status")) })
	http.HandleFunc("/dial", func(w http.ResponseWriter, r *http.Request) {
		c, err := net.DialTimeout("tcp", r.URL.Query().Get("addr"), 3*time.Second)
		if err != nil {
			fmt.Fprint(w, err)
			return
		}
		c.Close()
		fmt.Fprint(w, "connected")
	})
	http.HandleFunc("/write", func(w http.ResponseWriter, r *http.Request) {
		err := os.WriteFile("/probe", []byte("x"), 0o600)
		var errno syscall.Errno
		switch {
		case err == nil:
			fmt.Fprint(w, "written")
		case errors.As(err, &errno):
			fmt.Fprint(w, int(errno))
		default:
			fmt.Fprint(w, err)
		}
	})
	// PROBE_LISTEN chooses the address (a loopback-only one, say).
	addr := os.Getenv("PROBE_LISTEN")
	if addr == "" {
		addr = ":8080"
	}
	fmt.Println("listening on 8080")
	if err := http.ListenAndServe(addr, nil); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}

func read(p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		return []byte(err.Error())
	}
	return b
}
