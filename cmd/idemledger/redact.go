package main

import (
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Passwords never reach the command's messages. A -db value can carry one
// (postgres://user:PASSWORD@host/db, ?password=PASSWORD, or password=PASSWORD
// in a key=value connection string), and the messages that quote a -db
// value, or an argument that may be one, quote redactDSN's version of it.
// As a second line of defence, run collects the passwords of all the
// command-line arguments (argSecrets) and blots them out of everything
// written to stderr, whoever wrote it: the flag package quotes a bad flag
// value as given, and the command does not word the errors of drivers and
// libraries (pgx redacts the connection strings it quotes, but nothing
// here relies on that).

// redactedPassword stands for a password in messages, as in net/url's
// URL.Redacted.
const redactedPassword = "xxxxx"

// secretParams are the connection parameters whose values are secrets: a
// query parameter of a URL or a key of a key=value string. pgx reads both.
var secretParams = []string{"password", "sslpassword"}

// secretPair matches a password= or sslpassword= pair of a key=value
// connection string (libpq's syntax, which pgx accepts): the value is a
// single-quoted string with backslash escapes, or runs to the next space.
var secretPair = regexp.MustCompile(`(?i)\b((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s']\S*|)`)

// secretQueryPair matches a password or sslpassword parameter in the
// query of a URL that net/url cannot parse.
var secretQueryPair = regexp.MustCompile(`(?i)([?&](?:ssl)?password=)([^&#\s]*)`)

// redactDSN returns s with every password it holds replaced by xxxxx; s
// comes back unchanged when it holds none.
func redactDSN(s string) string {
	r, _ := redact(s)
	return r
}

// redact returns s with its passwords replaced by xxxxx, and the passwords,
// as they appear in s and, for URLs, percent-decoded too. A URL that
// net/url parses is cut where net/url cuts it; anything else (key=value
// strings, mistyped or unparseable URLs) loses its password= values and
// whatever is shaped like user info.
func redact(s string) (string, []string) {
	if !strings.Contains(s, "://") {
		return redactLoose(secretPair, s)
	}
	u, err := url.Parse(s)
	if err != nil {
		// pgx's multi-host URLs, say.
		return redactLoose(secretQueryPair, s)
	}
	s, secrets := redactURL(s, u)
	if u.User != nil {
		return s, secrets
	}
	// No user info for net/url, yet there may be one: it reads
	// "postgres:///user:pw@host" as a path.
	s, more := redactUserinfo(s)
	return s, append(secrets, more...)
}

// redactLoose replaces the values that re matches (see redactPairs) and
// the password of anything shaped like user info (see redactUserinfo).
func redactLoose(re *regexp.Regexp, s string) (string, []string) {
	s, secrets := redactPairs(re, s)
	s, more := redactUserinfo(s)
	return s, append(secrets, more...)
}

// userinfoStart matches what may come before the user info of a URL
// however it is spelled: a flag and its '=' (group 1), then a scheme
// followed by a colon, slashes or both (its separator is group 2), which
// redactUserinfo takes for a scheme even when it is mistyped.
var userinfoStart = regexp.MustCompile(`^(-{1,2}[A-Za-z]+=)?(?:[A-Za-z][A-Za-z0-9+.-]*(:/*|//+))?`)

// redactUserinfo redacts the password of anything shaped like the user
// info of a URL, user:password@, whether the scheme is mistyped
// ("postgres:/", "postgres//", "postgress://"), in capitals, missing, or
// followed by an empty authority ("postgres:///user:pw@host", which
// net/url reads as a path): everything between the first colon after the
// scheme and the last '@' goes. That is more than the password when the
// '@' belongs to something else, never less. A string with no colon
// before its last '@' holds no password and comes back unchanged.
func redactUserinfo(s string) (string, []string) {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s, nil
	}
	m := userinfoStart.FindStringSubmatchIndex(s[:at])
	start := m[1]
	c := strings.IndexByte(s[start:at], ':')
	if c < 0 && m[4] >= 0 && s[m[4]:m[5]] == ":" {
		// "user:password@host": what looked like a scheme was the user.
		start = max(m[3], 0)
		c = strings.IndexByte(s[start:at], ':')
	}
	if c < 0 {
		return s, nil
	}
	pw := s[start+c+1 : at]
	if pw == "" || pw == redactedPassword {
		return s, nil
	}
	secrets := []string{pw}
	if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
		secrets = append(secrets, dec)
	}
	return s[:start+c+1] + redactedPassword + s[at:], secrets
}

// redactURL redacts the password of the user info of s, which url.Parse
// parsed to u, and its password query parameters, and leaves the rest of s
// as written.
func redactURL(s string, u *url.URL) (string, []string) {
	// Cut s as url.Parse does: the fragment at the first '#', then the
	// query at the first '?'; the user info ends at the last '@' of the
	// authority, which runs from "//" to the next '/'.
	body, frag, hasFrag := strings.Cut(s, "#")
	body, query, hasQuery := strings.Cut(body, "?")
	var secrets []string
	if pw, ok := u.User.Password(); ok {
		start := strings.Index(body, "//") + len("//")
		auth := body[start:]
		if i := strings.IndexByte(auth, '/'); i >= 0 {
			auth = auth[:i]
		}
		at := strings.LastIndex(auth, "@")
		colon := strings.IndexByte(auth[:at], ':')
		secrets = append(secrets, pw, auth[colon+1:at])
		body = body[:start+colon+1] + redactedPassword + body[start+at:]
	}
	if hasQuery {
		parts := strings.Split(query, "&")
		for i, p := range parts {
			k, v, _ := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); err != nil || !isSecretParam(name) {
				continue
			}
			secrets = append(secrets, v)
			if dec, err := url.QueryUnescape(v); err == nil {
				secrets = append(secrets, dec)
			}
			parts[i] = k + "=" + redactedPassword
		}
		body += "?" + strings.Join(parts, "&")
	}
	if hasFrag {
		body += "#" + frag
	}
	return body, secrets
}

// redactPairs replaces the value (the second group) of every match of re
// in s with xxxxx.
func redactPairs(re *regexp.Regexp, s string) (string, []string) {
	var secrets []string
	out := re.ReplaceAllStringFunc(s, func(m string) string {
		g := re.FindStringSubmatch(m)
		v := strings.Trim(g[2], "'")
		secrets = append(secrets, g[2], v, strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(v))
		if dec, err := url.QueryUnescape(g[2]); err == nil {
			secrets = append(secrets, dec)
		}
		return g[1] + redactedPassword
	})
	return out, secrets
}

func isSecretParam(name string) bool {
	for _, p := range secretParams {
		if strings.EqualFold(name, p) {
			return true
		}
	}
	return false
}

// argSecrets returns the passwords held by any of args, longest first, so
// that a password that contains another is blotted out whole.
func argSecrets(args []string) []string {
	var secrets []string
	for _, a := range args {
		_, found := redact(a)
		for _, v := range found {
			if v != "" && v != redactedPassword && !slices.Contains(secrets, v) {
				secrets = append(secrets, v)
			}
		}
	}
	slices.SortStableFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	return secrets
}

// redactArgs returns redactDSN of each of args, for messages that quote
// arguments: a DSN given without -db, by mistake, is one of them.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = redactDSN(a)
	}
	return out
}

// blot replaces every occurrence of secrets in s with xxxxx, in one pass:
// the longest secret that matches at a place wins, and a secret that is a
// run of x's does not grow the xxxxx put in for another.
func blot(s string, secrets []string) string {
	if len(secrets) == 0 {
		return s
	}
	pairs := make([]string, 0, 2*len(secrets))
	for _, v := range secrets {
		pairs = append(pairs, v, redactedPassword)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// blotWriter passes each write to w with secrets blotted out. The flag
// package writes each of its messages in one call, so a password cannot be
// split between two writes.
type blotWriter struct {
	w       io.Writer
	secrets []string
}

func (b blotWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(b.w, blot(string(p), b.secrets)); err != nil {
		return 0, err
	}
	return len(p), nil
}
