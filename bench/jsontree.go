package bench

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The generators build a small tree and print it themselves, instead of
// going through encoding/json, because the point is to control the
// spelling: escapes a canonicalizer must undo, number forms it must
// rewrite, member orders it must sort, whitespace it must drop.

// node is one JSON value, printed exactly as the generator spelled it.
type node interface {
	print(p *printer, depth int)
}

// object keeps its members in the order the generator chose.
type object []member

type member struct {
	name  lit // a JSON string literal, quotes included
	value node
}

type array []node

// lit is a scalar written verbatim: a number, true, false, null, or a
// string literal with its quotes.
type lit string

// printer writes compact text when indent is empty, one member or element
// per line otherwise (the layout of JSON.stringify(v, null, indent)).
type printer struct {
	b      []byte
	indent string
}

func (p *printer) newline(depth int) {
	if p.indent == "" {
		return
	}
	p.b = append(p.b, '\n')
	for range depth {
		p.b = append(p.b, p.indent...)
	}
}

func (l lit) print(p *printer, _ int) { p.b = append(p.b, l...) }

func (o object) print(p *printer, depth int) {
	p.b = append(p.b, '{')
	for i, m := range o {
		if i > 0 {
			p.b = append(p.b, ',')
		}
		p.newline(depth + 1)
		p.b = append(p.b, m.name...)
		p.b = append(p.b, ':')
		if p.indent != "" {
			p.b = append(p.b, ' ')
		}
		m.value.print(p, depth+1)
	}
	if len(o) > 0 {
		p.newline(depth)
	}
	p.b = append(p.b, '}')
}

func (a array) print(p *printer, depth int) {
	p.b = append(p.b, '[')
	for i, v := range a {
		if i > 0 {
			p.b = append(p.b, ',')
		}
		p.newline(depth + 1)
		v.print(p, depth+1)
	}
	if len(a) > 0 {
		p.newline(depth)
	}
	p.b = append(p.b, ']')
}

// render prints n with the given indent ("" for compact text).
func render(n node, indent string) []byte {
	p := &printer{indent: indent}
	n.print(p, 0)
	return p.b
}

// str spells s as a JSON string literal in its shortest form: only the
// quote, the backslash and control characters are escaped, as RFC 8785
// section 3.2.2.2 prints them.
func str(s string) lit {
	return quote(s, false)
}

// strASCII spells s with every non-ASCII character as a \u escape (a
// surrogate pair above U+FFFF) and '/' as "\/", the way Python's json.dumps
// and PHP's json_encode write by default. A canonicalizer has to turn all
// of it back into UTF-8.
func strASCII(s string) lit {
	return quote(s, true)
}

func quote(s string, asciiOnly bool) lit {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			writeU(&b, r)
		case asciiOnly && r == '/':
			b.WriteString(`\/`)
		case asciiOnly && r >= utf8.RuneSelf:
			if r > 0xFFFF {
				r -= 0x10000
				writeU(&b, 0xD800+(r>>10))
				writeU(&b, 0xDC00+(r&0x3FF))
			} else {
				writeU(&b, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return lit(b.String())
}

func writeU(b *strings.Builder, r rune) {
	const hex = "0123456789abcdef"
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hex[(r>>shift)&0xF])
	}
}

// num spells an integer.
func num(i int64) lit {
	return lit(strconv.FormatInt(i, 10))
}
