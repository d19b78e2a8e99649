package canonical

import (
	"bytes"
	"slices"
)

// compareNames orders member names, given as UTF-8, by their UTF-16 code
// units (RFC 8785 section 3.2.3) without converting them. Byte order of
// UTF-8 is code point order, and code point order is UTF-16 order except
// that characters from U+10000 up (surrogate pairs, first unit 0xD800 to
// 0xDBFF) sort before U+E000 to U+FFFF. The first differing byte is either
// a continuation byte, with both characters of one length, where byte order
// holds, or a lead byte; only lead bytes 0xEE/0xEF (U+E000..U+FFFF) against
// 0xF0..0xF4 (U+10000 up) need the order flipped.
func compareNames(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x >= 0xEE && y >= 0xEE && (x >= 0xF0) != (y >= 0xF0) {
			if x >= 0xF0 {
				return -1
			}
			return 1
		}
		if x < y {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// sortKey is what sorting moves around: the resolved name and the index of
// its member, so that a comparison touches no more than two small structs.
type sortKey struct {
	name   []byte
	idx    int32
	simple bool // ASCII only: bytes.Compare is exact for it
}

// compareKeys orders two members by name. When either name is ASCII, no
// byte pair at a first difference can need the surrogate fix-up, so the
// assembly-backed bytes.Compare is exact.
func compareKeys(a, b *sortKey) int {
	if a.simple || b.simple {
		return bytes.Compare(a.name, b.name)
	}
	return compareNames(a.name, b.name)
}

func (s *state) nameOf(m *member) []byte {
	if m.inArena {
		return s.arena[m.nameOff : m.nameOff+m.nameLen]
	}
	return s.src[m.nameOff : m.nameOff+m.nameLen]
}

// closeObject puts the members of the object f in canonical order, refuses
// duplicate names, and drops the object's bookkeeping. The closing '}' is
// not yet written.
func (s *state) closeObject(f frame) error {
	ms := s.members[f.base:]
	defer func() {
		s.members = s.members[:f.base]
		s.arena = s.arena[:f.arenaBase]
	}()
	if len(ms) < 2 {
		return nil
	}
	keys := s.keys[:0]
	for j := range ms {
		keys = append(keys, sortKey{name: s.nameOf(&ms[j]), idx: int32(j), simple: ms[j].simple})
	}
	s.keys = keys[:0] // keep the capacity; the names must not outlive the call
	defer clear(keys)
	sorted := true
	for j := 1; j < len(keys); j++ {
		if compareKeys(&keys[j-1], &keys[j]) >= 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	sortKeys(keys)
	if off := firstDuplicate(ms, keys); off >= 0 {
		return errAt(off, ErrDuplicateName)
	}
	s.recordPerm(span{f.start, len(s.out)}, ms, keys)
	return nil
}

// sortKeys sorts by name: insertion sort for the small objects that make up
// most documents, where it beats a general sort's call overhead, and
// pattern-defeating quicksort (O(n log n) worst case) above that.
func sortKeys(keys []sortKey) {
	if len(keys) > 12 {
		slices.SortFunc(keys, func(a, b sortKey) int { return compareKeys(&a, &b) })
		return
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && compareKeys(&keys[j-1], &keys[j]) > 0; j-- {
			keys[j-1], keys[j] = keys[j], keys[j-1]
		}
	}
}

// firstDuplicate returns the input offset of the earliest member whose name
// an earlier member already had, or -1. keys is sorted by name.
func firstDuplicate(ms []member, keys []sortKey) int {
	best := -1
	for j := 0; j+1 < len(keys); {
		k := j + 1
		for k < len(keys) && compareKeys(&keys[j], &keys[k]) == 0 {
			k++
		}
		if k-j > 1 {
			// The second occurrence in the input is the second smallest
			// offset of the run.
			first, second := -1, -1
			for _, key := range keys[j:k] {
				off := ms[key.idx].srcOff
				switch {
				case first < 0 || off < first:
					first, second = off, first
				case second < 0 || off < second:
					second = off
				}
			}
			if best < 0 || second < best {
				best = second
			}
		}
		j = k
	}
	return best
}
