package setup

import (
	"slices"
	"testing"

	"github.com/selfcode/selfcode"
)

func TestReadNeeds(t *testing.T) {
	n, err := ReadNeeds(selfcode.AppManifest())
	if err != nil {
		t.Fatal(err)
	}
	if n.Permissions["contents"] != "write" || n.Permissions["actions"] != "read" || len(n.Permissions) != 6 {
		t.Errorf("permissions %v", n.Permissions)
	}
	if !slices.Contains(n.Events, "check_run") || len(n.Events) != 6 {
		t.Errorf("events %v", n.Events)
	}
	for _, bad := range []string{"", "name: x\n", "default_permissions: [a]\n", ": :"} {
		if _, err := ReadNeeds([]byte(bad)); err == nil {
			t.Errorf("ReadNeeds(%q) accepted", bad)
		}
	}
}
