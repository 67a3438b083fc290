package inventory

import (
	"errors"
	"fmt"
	"sort"
)

// Store keeps stock levels by SKU.
type Store struct {
	levels map[string]int
}

var ErrUnknown = errors.New("unknown sku")

func NewStore() *Store {
	return &Store{levels: make(map[string]int)}
}

func (s *Store) Take(sku string, n int) error {
	have, ok := s.levels[sku]
	if !ok {
		return fmt.Errorf("take %q: %w", sku, ErrUnknown)
	}
	s.levels[sku] = have - <@a>n
	return nil
}

func (s *Store) SKUs() []string {
	out := make([]string, 0, len(s.levels))
	for k := range s.levels {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
