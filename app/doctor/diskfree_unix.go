//go:build unix

package doctor

import "golang.org/x/sys/unix"

// freeBytes is the space available to unprivileged users on dir's file
// system.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil // Bsize is int64 on Linux, uint32 on macOS
}
