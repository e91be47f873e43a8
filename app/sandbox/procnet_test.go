package sandbox

import (
	"net/netip"
	"os"
	"slices"
	"testing"
)

// testdata/procnet/listeners.txt is /proc/net/tcp then /proc/net/tcp6 of
// a container of the sandbox image without network, in which python3
// listened on 127.0.0.1:8080, [::]:8081, 0.0.0.0:8083 (with a connection to
// it open) and [::ffff:127.0.0.1]:8084.
func TestListenAddrs(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/procnet/listeners.txt")
	if err != nil {
		t.Fatal(err)
	}
	// ::1, as a kernel with IPv6 on its loopback prints it.
	table := string(data) + "   2: 00000000000000000000000001000000:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 10001        0 1 1 0 100 0 0 10 0\n"
	tests := []struct {
		port     int
		want     []string
		loopback bool
	}{
		{8080, []string{"127.0.0.1"}, true},
		{8081, []string{"::"}, false},
		{8082, []string{"::1"}, true},
		{8083, []string{"0.0.0.0"}, false}, // the established connections are not listeners
		{8084, []string{"::ffff:127.0.0.1"}, true},
		{8085, nil, false}, // nothing listens: nothing to judge
	}
	for _, tt := range tests {
		addrs := listenAddrs(table, tt.port)
		var got []string
		for _, a := range addrs {
			got = append(got, a.String())
		}
		if !slices.Equal(got, tt.want) || loopbackOnly(addrs) != tt.loopback {
			t.Errorf("port %d: %q (loopback only %v), want %q (%v)", tt.port, got, loopbackOnly(addrs), tt.want, tt.loopback)
		}
	}
	both := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("0.0.0.0")}
	if loopbackOnly(both) {
		t.Error("a listener on 0.0.0.0 beside one on 127.0.0.1 counted as loopback only")
	}
}

func FuzzListenAddrs(f *testing.F) {
	if data, err := os.ReadFile("testdata/procnet/listeners.txt"); err == nil {
		f.Add(string(data), 8080)
	}
	f.Add("   0: 0100007F:1F90 00000000:0000 0A\n", 8080)
	f.Add("0: zz:1F90 0 0A\n0: 0100007F 0 0A\n0: :: 0 0A\n", 0)
	f.Fuzz(func(t *testing.T, table string, port int) {
		for _, a := range listenAddrs(table, port) {
			if !a.IsValid() {
				t.Fatalf("invalid address from %q", table)
			}
		}
	})
}
