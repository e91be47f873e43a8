// Package store keeps values by key.
package store

import (
	"errors"
	"sync"
)

// DefaultPath is where the store lives.
const DefaultPath = "data.db"

// ErrNotFound is returned for a missing key.
var ErrNotFound = errors.New("not found")

// ID names an entry.
type ID = string

// Getter reads and writes values.
type Getter interface {
	Get(key string) ([]byte, error)
	Put(key string, value []byte) error
}

// Store is an in-memory Getter.
type Store struct {
	mu   sync.Mutex
	data map[string][]byte
	Path string
}

// Cache is a typed cache.
type Cache[K comparable, V any] struct {
	items map[K]V
}

// New returns an empty store.
func New(path string) (*Store, error) {
	return &Store{data: map[string][]byte{}, Path: path}, nil
}

// Get returns a value.
func (s *Store) Get(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.data[key]
	if !ok {
		return nil, ErrNotFound
	}
	return v, nil
}

// Put stores a value.
func (s *Store) Put(key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[key] = value
	return nil
}

func (s *Store) size() int { return len(s.data) }
