package dockertest

import (
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// BridgeIP is the Docker bridge's address on this machine: what a
// sandbox's setup phase reaches, and nothing beyond the machine.
func BridgeIP(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("docker", "network", "inspect", "bridge", "--format", `{{index .Options "com.docker.network.bridge.name"}}`).Output()
	if err != nil {
		t.Fatalf("docker network inspect bridge: %v", err)
	}
	name := strings.TrimSpace(string(out))
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatalf("bridge interface %q: %v", name, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatalf("no IPv4 address on %s", name)
	return ""
}

// ServeOnBridge serves h on the bridge address until the test ends and
// returns its base URL ("http://172.17.0.1:port"): a registry, module proxy
// or package index a sandbox's setup can fetch from.
func ServeOnBridge(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(BridgeIP(t), "0"))
	if err != nil {
		t.Fatalf("listen on the bridge: %v", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}
