package canonical

import "slices"

// Objects whose members arrive out of order are not rearranged when they
// close: moving an object's bytes at every level would copy a deeply nested
// document once per level (a 1 MB string under 1000 unsorted objects would
// cost a gigabyte of copying). Instead each such object records its members
// in sorted order, and emit copies every byte exactly once, in canonical
// order, to the caller's buffer.

// span is a range [start, end) of state.out.
type span struct{ start, end int }

// perm is an object whose members must be reordered: its inside (between
// the braces), its members' spans, sorted, at segs[off : off+n], and, once
// perms are in document order, the index of the first perm after it that
// is not nested in it.
type perm struct {
	inside span
	off, n int
	next   int
}

// task is one step of emit: copy a span, resolving the reordered objects
// among perms[lo:hi] that start inside it, or write a comma.
type task struct {
	span   span
	lo, hi int
	comma  bool
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

// emit writes s.out to dst (of the same length) in canonical member order.
func (s *state) emit(dst []byte) {
	if len(s.perms) == 0 {
		copy(dst, s.out)
		return
	}
	s.linkPerms()
	src, perms := s.out, s.perms
	w := 0
	s.tasks = append(s.tasks[:0], task{span: span{0, len(src)}, lo: 0, hi: len(perms)})
	for len(s.tasks) > 0 {
		t := s.tasks[len(s.tasks)-1]
		s.tasks = s.tasks[:len(s.tasks)-1]
		if t.comma {
			dst[w] = ','
			w++
			continue
		}
		a, b := t.span.start, t.span.end
		// The first reordered object whose inside starts in (a, b) is the
		// outermost one there, since an object starts before its children.
		// The bound is strict: a member span starts where its object's
		// inside does, and it is the member, not the object, to copy.
		i := t.lo
		if i < t.hi && perms[i].inside.start <= a {
			i, _ = slices.BinarySearchFunc(perms[t.lo:t.hi], a+1, func(p perm, x int) int { return p.inside.start - x })
			i += t.lo
		}
		if i == t.hi || perms[i].inside.start >= b {
			w += copy(dst[w:], src[a:b])
			continue
		}
		p := &perms[i]
		w += copy(dst[w:], src[a:p.inside.start])
		// Pushed in reverse: the members in sorted order with commas
		// between them, then the rest of [a, b) from the closing brace.
		s.tasks = append(s.tasks, task{span: span{p.inside.end, b}, lo: p.next, hi: t.hi})
		segs := s.segs[p.off : p.off+p.n]
		for j := len(segs) - 1; j >= 0; j-- {
			s.tasks = append(s.tasks, task{span: segs[j], lo: i + 1, hi: p.next})
			if j > 0 {
				s.tasks = append(s.tasks, task{comma: true})
			}
		}
	}
}

// linkPerms puts perms in document order (objects close inner first) and
// sets each one's next.
func (s *state) linkPerms() {
	perms := s.perms
	slices.SortFunc(perms, func(a, b perm) int { return a.inside.start - b.inside.start })
	open := s.open[:0] // indices of perms whose inside has not ended yet
	for i := range perms {
		for len(open) > 0 && perms[open[len(open)-1]].inside.end <= perms[i].inside.start {
			perms[open[len(open)-1]].next = i
			open = open[:len(open)-1]
		}
		open = append(open, i)
	}
	for _, j := range open {
		perms[j].next = len(perms)
	}
	s.open = open[:0]
}
