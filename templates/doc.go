// Package templates renders selfcode's Markdown reports — pull request body,
// progress, plan, status, help, permission and failure comments — from
// embedded text/template files that an operator may override block by block,
// keeping every body under GitHub's size limit by trimming logs, never the
// summary.
package templates
