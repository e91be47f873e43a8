package fakegithub_test

import (
	"fmt"
	"log"

	"github.com/selfcode/selfcode/internal/fakegithub"
)

// A typical end-to-end setup: an installation, a repository with a file, an issue,
// a maintainer's /selfcode comment. Point the code under test at fake.URL() with
// fake.AppID() and fake.PrivateKeyPEM(), then assert on the accessors.
func Example() {
	fake, err := fakegithub.New(fakegithub.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer fake.Close()

	fake.AddInstallation(1, "octo")
	if err := fake.AddRepo("octo", "hello", fakegithub.RepoOptions{
		Files: map[string]string{"go.mod": "module hello\n"},
	}); err != nil {
		log.Fatal(err)
	}
	if err := fake.SetPermission("octo", "hello", "alice", "maintain"); err != nil {
		log.Fatal(err)
	}
	n, _ := fake.AddIssue("octo", "hello", fakegithub.Issue{Title: "Add a README", User: "alice"})
	c, _ := fake.AddIssueComment("octo", "hello", n, "alice", "/selfcode")

	// … deliver a webhook naming comment c.ID and run the code under test …

	fmt.Println(fake.BotLogin())
	fmt.Println(len(fake.Comments("octo", "hello", n)), c.Body)
	fmt.Println(len(fake.PullRequests("octo", "hello")))
	// Output:
	// selfcode-test[bot]
	// 1 /selfcode
	// 0
}
