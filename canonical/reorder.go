package canonical

import "slices"

// Objects whose members arrive out of order are not rearranged when they
// close: moving an object's bytes at every level would copy a deeply nested
// document once per level (a 1 MB string under 1000 unsorted objects would
// cost a gigabyte of copying). Instead each such object records its members
// in sorted order, and one final pass copies every byte exactly once into
// canonical order.

// span is a range [start, end) of the output.
type span struct{ start, end int }

// perm is an object whose members must be reordered: its inside (between
// the braces) and its members' spans, sorted, at segs[off : off+n].
type perm struct {
	inside span
	off, n int
}

// task is one step of the final pass: copy a span of the input-order
// bytes, resolving reordered objects inside it, or write a comma.
type task struct {
	span  span
	comma bool
}

// recordPerm notes that the object with the given inside has members ms to
// be written in the order of keys.
func (s *state) recordPerm(inside span, ms []member, keys []sortKey) {
	p := perm{inside: inside, off: len(s.segs), n: len(keys)}
	for _, k := range keys {
		m := &ms[k.idx]
		s.segs = append(s.segs, span{m.start, m.end})
	}
	s.perms = append(s.perms, p)
}

// assemble rewrites s.out[base:] in canonical member order. Spans are
// absolute offsets in s.out; the length does not change.
func (s *state) assemble(base int) {
	// Objects close inner first; the pass needs them in document order.
	slices.SortFunc(s.perms, func(a, b perm) int { return a.inside.start - b.inside.start })
	s.scratch = append(s.scratch[:0], s.out[base:]...)
	w := base
	s.tasks = append(s.tasks[:0], task{span: span{base, len(s.out)}})
	for len(s.tasks) > 0 {
		t := s.tasks[len(s.tasks)-1]
		s.tasks = s.tasks[:len(s.tasks)-1]
		if t.comma {
			s.out[w] = ','
			w++
			continue
		}
		a, b := t.span.start, t.span.end
		// The first reordered object whose inside starts in (a, b) is the
		// outermost one there, since an object starts before its children.
		// The bound is strict: a member span starts where its object's
		// inside does, and it is the member, not the object, to copy.
		i, _ := slices.BinarySearchFunc(s.perms, a+1, func(p perm, a int) int { return p.inside.start - a })
		if i == len(s.perms) || s.perms[i].inside.start >= b {
			w += copy(s.out[w:], s.scratch[a-base:b-base])
			continue
		}
		p := s.perms[i]
		w += copy(s.out[w:], s.scratch[a-base:p.inside.start-base])
		// Pushed in reverse: the members in sorted order with commas
		// between them, then the rest of [a, b) from the closing brace.
		s.tasks = append(s.tasks, task{span: span{p.inside.end, b}})
		segs := s.segs[p.off : p.off+p.n]
		for j := len(segs) - 1; j >= 0; j-- {
			s.tasks = append(s.tasks, task{span: segs[j]})
			if j > 0 {
				s.tasks = append(s.tasks, task{comma: true})
			}
		}
	}
}
