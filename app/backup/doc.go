// Package backup makes consistent copies of the live bbolt store: it streams
// one read transaction's snapshot over the admin API and saves and checks such
// a copy on the operator's side.
package backup
