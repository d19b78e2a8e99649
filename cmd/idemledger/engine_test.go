package main

import "testing"

// TestDSNForms: the forms the -db help and the messages list are built
// from the registered engines, URL engines by their first scheme, the
// default engine's form last, whatever engines there are.
func TestDSNForms(t *testing.T) {
	file := &engine{name: "F", schemes: []string{"file"}, fallback: true, form: "a file path"}
	a := &engine{name: "A", schemes: []string{"aa", "a2"}}
	b := &engine{name: "B", schemes: []string{"bb"}}
	c := &engine{name: "C", schemes: []string{"cc"}}
	tests := []struct {
		engines []*engine
		want    string
	}{
		{[]*engine{file}, "a file path"},
		{[]*engine{a}, "a aa:// URL"},
		{[]*engine{a, file}, "a aa:// URL, a file path"},
		{[]*engine{c, file, a}, "a aa:// or cc:// URL, a file path"},
		{[]*engine{b, c, a, file}, "a aa://, bb:// or cc:// URL, a file path"},
	}
	saved := engines
	defer func() { engines = saved }()
	for _, tt := range tests {
		engines = nil
		for _, e := range tt.engines {
			register(e)
		}
		if got := dsnForms(); got != tt.want {
			t.Errorf("dsnForms() with %d engines = %q, want %q", len(tt.engines), got, tt.want)
		}
	}
}

func TestExecMode(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://u:pw@h:5432/db", "postgres://u:pw@h:5432/db?default_query_exec_mode=exec"},
		{"postgres://u@h/db?sslmode=disable", "postgres://u@h/db?sslmode=disable&default_query_exec_mode=exec"},
		{"postgres://u@h/db?default_query_exec_mode=simple_protocol", "postgres://u@h/db?default_query_exec_mode=simple_protocol"},
	}
	for _, tt := range tests {
		if got := execMode(tt.in); got != tt.want {
			t.Errorf("execMode(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
