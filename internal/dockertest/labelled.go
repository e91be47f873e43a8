package dockertest

import (
	"archive/tar"
	"bytes"
	"maps"
	"os/exec"
	"slices"
	"testing"
)

// ImportLabelled imports, as ref, an image of one small file carrying
// labels (the recipe label of a sandbox image, say), in well under a
// second, and removes it when the test ends, by its name and by its ID
// (a test that builds ref anew leaves this one without a name). It
// returns the image's ID.
func ImportLabelled(t testing.TB, ref string, labels map[string]string) string {
	t.Helper()
	var rootfs bytes.Buffer
	tw := tar.NewWriter(&rootfs)
	body := []byte("a test image\n")
	if err := tw.WriteHeader(&tar.Header{Name: "ImportLabelled", Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	args := []string{"import"}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--change", "LABEL "+k+"="+labels[k])
	}
	cmd := exec.Command("docker", append(args, "-", ref)...)
	cmd.Stdin = &rootfs
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	RemoveImages(t, ref)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker import %s: %v\n%s", ref, err, &stderr)
	}
	id := string(bytes.TrimSpace(out))
	RemoveImages(t, id)
	return id
}
