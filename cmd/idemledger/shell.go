package main

import "strings"

// shellQuote returns s as one word of a POSIX shell command line: as it
// is when every byte is one that no shell treats specially anywhere in a
// word, else in single quotes, inside which only the quote itself needs
// care: each one becomes a closing quote, an escaped quote (\') and an
// opening quote.
// https://pubs.opengroup.org/onlinepubs/9799919799/utilities/V3_chap02.html#tag_19_02_02
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, shellSafe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellSafe are the bytes that need no quoting in any position of a word.
// '=' (zsh expands a leading one), '~' and '%' are left out.
const shellSafe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@+:,./-"
