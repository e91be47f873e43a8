package sandbox

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"
)

// tcpListen is the state of a listening socket in /proc/net/tcp{,6}.
const tcpListen = "0A"

// listenAddrs returns the local addresses of the sockets listening on port
// in table, the text of /proc/net/tcp and /proc/net/tcp6 (either, or both
// one after the other). The kernel prints an address as the 32-bit words
// it holds, each in the machine's byte order: little-endian on every
// architecture the sandbox image is built for (amd64, arm64). Lines that
// are not a socket (the headers) are passed over.
func listenAddrs(table string, port int) []netip.Addr {
	var out []netip.Addr
	for line := range strings.Lines(table) {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != tcpListen {
			continue
		}
		addr, p, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(p, 16, 16); err != nil || int(n) != port {
			continue
		}
		if a, ok := procAddr(addr); ok {
			out = append(out, a)
		}
	}
	return out
}

// procAddr decodes an address as /proc/net/tcp{,6} prints it: 8 or 32 hex
// digits, 32-bit words in little-endian order.
func procAddr(s string) (netip.Addr, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.Addr{}, false
	}
	for i := 0; i < len(b); i += 4 {
		binary.BigEndian.PutUint32(b[i:], binary.LittleEndian.Uint32(b[i:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return a, true
}

// loopbackOnly reports whether addrs holds a listener and every one is on
// a loopback address (127.0.0.0/8, ::1, or 127.x mapped into IPv6): none
// is reachable through a published port.
func loopbackOnly(addrs []netip.Addr) bool {
	for _, a := range addrs {
		if !a.Unmap().IsLoopback() {
			return false
		}
	}
	return len(addrs) > 0
}
