package canonical

import "slices"

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
	sorted := true
	for j := 1; j < len(ms); j++ {
		if compareNames(s.nameOf(&ms[j-1]), s.nameOf(&ms[j])) >= 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	slices.SortFunc(ms, func(a, b member) int {
		return compareNames(s.nameOf(&a), s.nameOf(&b))
	})
	if off := s.firstDuplicate(ms); off >= 0 {
		return errAt(off, ErrDuplicateName)
	}
	s.scratch = append(s.scratch[:0], s.out[f.start:]...)
	w := f.start
	for j := range ms {
		if j > 0 {
			s.out[w] = ','
			w++
		}
		w += copy(s.out[w:], s.scratch[ms[j].start-f.start:ms[j].end-f.start])
	}
	return nil
}

// firstDuplicate returns the input offset of the earliest member whose name
// an earlier member already had, or -1. ms is sorted by name.
func (s *state) firstDuplicate(ms []member) int {
	best := -1
	for j := 0; j+1 < len(ms); {
		k := j + 1
		for k < len(ms) && compareNames(s.nameOf(&ms[j]), s.nameOf(&ms[k])) == 0 {
			k++
		}
		if k-j > 1 {
			// The second occurrence in the input is the second smallest
			// offset of the run.
			first, second := -1, -1
			for _, m := range ms[j:k] {
				switch {
				case first < 0 || m.srcOff < first:
					first, second = m.srcOff, first
				case second < 0 || m.srcOff < second:
					second = m.srcOff
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
