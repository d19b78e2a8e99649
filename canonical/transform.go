package canonical

import "sync"

// The scanner makes one pass over the input and writes canonical bytes as it
// goes. Members of an object are written in input order; when the object
// closes, its members are sorted by name and, only if they were out of
// order, moved into place through a scratch buffer. Containers are tracked
// on an explicit stack, so nesting depth costs heap, not goroutine stack.

// frame is one open array or object.
type frame struct {
	obj       bool
	base      int // index in state.members of this object's first member
	start     int // offset in out just after the '{'
	arenaBase int // length of state.arena when the object opened
}

// member is one name/value pair of an open object.
type member struct {
	inArena bool // name bytes are in state.arena (it had escapes), else in src
	nameOff int
	nameLen int
	srcOff  int // offset of the name in src, for errors
	start   int // offset in out of the member's opening quote
	end     int // offset in out just after its value
}

// state is the scratch space of one call, recycled through statePool.
type state struct {
	src      []byte
	out      []byte
	maxDepth int
	exact    bool
	stack    []frame
	members  []member
	arena    []byte // unescaped names that had escapes in the input
	scratch  []byte // an object's bytes while its members are reordered
}

var statePool = sync.Pool{New: func() any { return new(state) }}

func getState(o Options) *state {
	s := statePool.Get().(*state)
	s.maxDepth = o.MaxDepth
	if s.maxDepth <= 0 {
		s.maxDepth = DefaultMaxDepth
	}
	s.exact = o.ExactNumbers
	return s
}

// maxPooled bounds the scratch capacity kept for reuse, so that one huge
// document does not pin its buffers for the life of the process.
const maxPooled = 4 << 20

func putState(s *state) {
	s.src, s.out = nil, nil
	if cap(s.scratch) > maxPooled || cap(s.arena) > maxPooled || cap(s.members) > maxPooled/64 || cap(s.stack) > 1<<16 {
		return
	}
	s.stack = s.stack[:0]
	s.members = s.members[:0]
	s.arena = s.arena[:0]
	s.scratch = s.scratch[:0]
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

// run appends the canonical form of src to dst.
func (s *state) run(dst, src []byte) ([]byte, error) {
	s.src = src
	s.out = dst
	i := skipWS(src, 0)
	if i == len(src) {
		return nil, errAt(i, ErrEmpty)
	}
	var err error
	for {
		// A value starts at i (after whitespace).
		if i == len(src) {
			return nil, errAt(i, ErrUnexpectedEnd)
		}
		switch c := src[i]; c {
		case '{', '[':
			if len(s.stack) >= s.maxDepth {
				return nil, errAt(i, ErrTooDeep)
			}
			s.out = append(s.out, c)
			i = skipWS(src, i+1)
			if c == '[' {
				if i < len(src) && src[i] == ']' {
					s.out = append(s.out, ']')
					i++
					break
				}
				s.stack = append(s.stack, frame{})
				continue
			}
			if i < len(src) && src[i] == '}' {
				s.out = append(s.out, '}')
				i++
				break
			}
			s.stack = append(s.stack, frame{obj: true, base: len(s.members), start: len(s.out), arenaBase: len(s.arena)})
			if i, err = s.name(i); err != nil {
				return nil, err
			}
			continue
		case '"':
			if i, _, err = s.str(i); err != nil {
				return nil, err
			}
		case 't':
			if i, err = s.literal(i, "true"); err != nil {
				return nil, err
			}
		case 'f':
			if i, err = s.literal(i, "false"); err != nil {
				return nil, err
			}
		case 'n':
			if i, err = s.literal(i, "null"); err != nil {
				return nil, err
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			if i, err = s.number(i); err != nil {
				return nil, err
			}
		case 'N':
			if hasWord(src[i:], "NaN") {
				return nil, errAt(i, ErrNonFinite)
			}
			return nil, errAt(i, ErrSyntax)
		case 'I':
			if hasWord(src[i:], "Infinity") {
				return nil, errAt(i, ErrNonFinite)
			}
			return nil, errAt(i, ErrSyntax)
		default:
			return nil, errAt(i, ErrSyntax)
		}

		// A value has ended at i: close containers until one continues.
		for {
			i = skipWS(src, i)
			if len(s.stack) == 0 {
				if i != len(src) {
					return nil, errAt(i, ErrTrailingData)
				}
				return s.out, nil
			}
			if i == len(src) {
				return nil, errAt(i, ErrUnexpectedEnd)
			}
			top := &s.stack[len(s.stack)-1]
			c := src[i]
			if top.obj {
				s.members[len(s.members)-1].end = len(s.out)
				if c == '}' {
					if err = s.closeObject(*top); err != nil {
						return nil, err
					}
					s.out = append(s.out, '}')
					s.stack = s.stack[:len(s.stack)-1]
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
				return nil, errAt(i, ErrSyntax)
			}
			comma := i
			s.out = append(s.out, ',')
			i = skipWS(src, i+1)
			if i < len(src) && (src[i] == ']' || src[i] == '}') {
				return nil, errAt(comma, ErrTrailingComma)
			}
			if top.obj {
				if i, err = s.name(i); err != nil {
					return nil, err
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
	end, escaped, err := s.str(i)
	if err != nil {
		return 0, err
	}
	if escaped {
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
