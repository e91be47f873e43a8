// Package tools carries out the model's file tools (view, search,
// str_replace, insert, create, delete, finish) on a checkout, under a path
// policy, so that every refused call changes nothing on disk.
package tools
