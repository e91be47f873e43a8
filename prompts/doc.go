// Package prompts holds every prompt selfcode sends to a model, as
// text/template files embedded in the binary; a directory given at start-up
// may override any of them by file name. Untrusted text (issue, comments,
// file contents, command output) is always placed inside data delimiters the
// system prompts tell the model never to obey.
package prompts
