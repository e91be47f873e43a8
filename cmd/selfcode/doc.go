// Command selfcode is the selfcode GitHub App: `selfcode serve` runs it;
// the other subcommands run one pipeline locally, demo the whole loop,
// talk to a running server's admin API and register the App.
package main
