package canonical

import "sync"

// The scanner makes one pass over the input and writes canonical bytes as it
// goes. Members of an object are written in input order; when the object
// closes, its members are sorted by name and, only if they were out of
// order, their sorted spans are recorded for one final reordering pass
// (reorder.go). Containers are tracked
// on an explicit stack, so nesting depth costs heap, not goroutine stack.

// frame is one open object.
type frame struct {
	base      int // index in state.members of this object's first member
	start     int // offset in out just after the '{'
	arenaBase int // length of state.arena when the object opened
}

// member is one name/value pair of an open object.
type member struct {
	inArena bool // name bytes are in state.arena (it had escapes), else in src
	simple  bool // name is ASCII only, so plain byte order is UTF-16 order
	nameOff int
	nameLen int
	srcOff  int // offset of the name in src, for errors
	start   int // offset in out of the member's opening quote
	end     int // offset in out just after its value
}

// state is the scratch space of one call, recycled through statePool.
type state struct {
	src      []byte
	out      []byte // canonical tokens in input member order (in buf)
	buf      []byte // backing store of out, kept across calls
	maxDepth int
	exact    bool
	nonchar  bool    // refuse noncharacters (Options.RefuseNoncharacters)
	stack    []bool  // per open container: is it an object (else an array)
	objs     []frame // per open object
	members  []member
	keys     []sortKey // sort space for the object being closed
	arena    []byte    // unescaped names that had escapes in the input
	perms    []perm    // objects to reorder in the final pass
	segs     []span    // their members' spans, in sorted order
	tasks    []task    // work stack of the final pass
	open     []int     // scratch of linkPerms
}

var statePool = sync.Pool{New: func() any { return new(state) }}

func getState(o Options) *state {
	s := statePool.Get().(*state)
	s.maxDepth = o.MaxDepth
	if s.maxDepth <= 0 {
		s.maxDepth = DefaultMaxDepth
	}
	s.exact = o.ExactNumbers
	s.nonchar = o.RefuseNoncharacters
	return s
}

// maxPooled bounds the scratch capacity kept for reuse, so that one huge
// document does not pin its buffers for the life of the process.
const maxPooled = 4 << 20

func putState(s *state) {
	if cap(s.out) > cap(s.buf) { // out outgrew buf: keep the larger one
		s.buf = s.out[:0]
	}
	s.src, s.out = nil, nil
	if cap(s.buf) > maxPooled || cap(s.arena) > maxPooled || cap(s.members) > maxPooled/64 || cap(s.stack) > 1<<16 || cap(s.objs) > 1<<16 || cap(s.keys) > 1<<16 ||
		cap(s.perms) > 1<<16 || cap(s.segs) > 1<<18 || cap(s.tasks) > 1<<16 || cap(s.open) > 1<<16 {
		return
	}
	s.stack = s.stack[:0]
	s.objs = s.objs[:0]
	s.members = s.members[:0]
	s.arena = s.arena[:0]
	s.keys = s.keys[:0]
	s.perms = s.perms[:0]
	s.segs = s.segs[:0]
	s.tasks = s.tasks[:0]
	s.open = s.open[:0]
	statePool.Put(s)
}

// ws marks the four whitespace bytes of RFC 8259 section 2.
var ws = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

func skipWS(src []byte, i int) int {
	for i < len(src) && ws[src[i]] {
		i++
	}
	return i
}

// run writes the canonical tokens of src to s.out, with object members in
// input order; emit then writes them out in canonical order.
func (s *state) run(src []byte) error {
	s.src = src
	if cap(s.buf) < len(src)+16 {
		// Canonical form is rarely longer than the input; the slack covers
		// numbers such as 1e20 that print longer than written.
		s.buf = make([]byte, 0, len(src)+16)
	}
	s.out = s.buf[:0]
	i := skipWS(src, 0)
	if i == len(src) {
		return errAt(i, ErrEmpty)
	}
	var err error
	for {
		// A value starts at i (after whitespace).
		if i == len(src) {
			return errAt(i, ErrUnexpectedEnd)
		}
		switch c := src[i]; c {
		case '{', '[':
			if len(s.stack) >= s.maxDepth {
				return errAt(i, ErrTooDeep)
			}
			s.out = append(s.out, c)
			i = skipWS(src, i+1)
			if c == '[' {
				if i < len(src) && src[i] == ']' {
					s.out = append(s.out, ']')
					i++
					break
				}
				s.stack = append(s.stack, false)
				continue
			}
			if i < len(src) && src[i] == '}' {
				s.out = append(s.out, '}')
				i++
				break
			}
			s.stack = append(s.stack, true)
			s.objs = append(s.objs, frame{base: len(s.members), start: len(s.out), arenaBase: len(s.arena)})
			if i, err = s.name(i); err != nil {
				return err
			}
			continue
		case '"':
			if i, _, err = s.str(i); err != nil {
				return err
			}
		case 't':
			if i, err = s.literal(i, "true"); err != nil {
				return err
			}
		case 'f':
			if i, err = s.literal(i, "false"); err != nil {
				return err
			}
		case 'n':
			if i, err = s.literal(i, "null"); err != nil {
				return err
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			if i, err = s.number(i); err != nil {
				return err
			}
		case 'N':
			if hasWord(src[i:], "NaN") {
				return errAt(i, ErrNonFinite)
			}
			return errAt(i, ErrSyntax)
		case 'I':
			if hasWord(src[i:], "Infinity") {
				return errAt(i, ErrNonFinite)
			}
			return errAt(i, ErrSyntax)
		default:
			return errAt(i, ErrSyntax)
		}

		// A value has ended at i: close containers until one continues.
		for {
			i = skipWS(src, i)
			if len(s.stack) == 0 {
				if i != len(src) {
					return errAt(i, ErrTrailingData)
				}
				return nil
			}
			if i == len(src) {
				return errAt(i, ErrUnexpectedEnd)
			}
			obj := s.stack[len(s.stack)-1]
			c := src[i]
			if obj {
				s.members[len(s.members)-1].end = len(s.out)
				if c == '}' {
					if err = s.closeObject(s.objs[len(s.objs)-1]); err != nil {
						return err
					}
					s.out = append(s.out, '}')
					s.stack = s.stack[:len(s.stack)-1]
					s.objs = s.objs[:len(s.objs)-1]
					i++
					continue
				}
			} else if c == ']' {
				s.out = append(s.out, ']')
				s.stack = s.stack[:len(s.stack)-1]
				i++
				continue
			}
			if c != ',' {
				return errAt(i, ErrSyntax)
			}
			comma := i
			s.out = append(s.out, ',')
			i = skipWS(src, i+1)
			if i < len(src) && (src[i] == ']' || src[i] == '}') {
				return errAt(comma, ErrTrailingComma)
			}
			if obj {
				if i, err = s.name(i); err != nil {
					return err
				}
			}
			break
		}
	}
}

// name reads a member name and its colon at src[i], records the member and
// returns the offset where its value starts.
func (s *state) name(i int) (int, error) {
	src := s.src
	if i == len(src) {
		return 0, errAt(i, ErrUnexpectedEnd)
	}
	if src[i] != '"' {
		return 0, errAt(i, ErrSyntax)
	}
	m := member{srcOff: i, start: len(s.out)}
	end, flags, err := s.str(i)
	if err != nil {
		return 0, err
	}
	// An escape may stand for any character: only unescaped ASCII is
	// known to be simple.
	m.simple = flags == 0
	if flags&hasEscape != 0 {
		m.inArena = true
		m.nameOff = len(s.arena)
		s.arena = unescape(s.arena, s.out[m.start+1:len(s.out)-1])
		m.nameLen = len(s.arena) - m.nameOff
	} else {
		m.nameOff = i + 1
		m.nameLen = end - i - 2
	}
	s.members = append(s.members, m)
	end = skipWS(src, end)
	if end == len(src) {
		return 0, errAt(end, ErrUnexpectedEnd)
	}
	if src[end] != ':' {
		return 0, errAt(end, ErrSyntax)
	}
	s.out = append(s.out, ':')
	return skipWS(src, end+1), nil
}

// literal checks for word at src[i] and copies it.
func (s *state) literal(i int, word string) (int, error) {
	if hasWord(s.src[i:], word) {
		s.out = append(s.out, word...)
		return i + len(word), nil
	}
	rest := s.src[i:]
	if len(rest) < len(word) && string(rest) == word[:len(rest)] {
		return 0, errAt(len(s.src), ErrUnexpectedEnd)
	}
	return 0, errAt(i, ErrSyntax)
}

func hasWord(b []byte, word string) bool {
	return len(b) >= len(word) && string(b[:len(word)]) == word
}
