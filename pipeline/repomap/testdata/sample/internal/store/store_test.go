package store

import "testing"

func newTestStore(t *testing.T) *Store {
	s, err := New(DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGetMissing(t *testing.T) {
	if _, err := newTestStore(t).Get("x"); err != ErrNotFound {
		t.Fatal(err)
	}
}

func TestPutGet(t *testing.T) {
	s := newTestStore(t)
	if err := s.Put("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if s.size() != 1 {
		t.Fatal("size")
	}
}
