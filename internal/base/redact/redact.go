// Package redact is the one place a configured URL (an upstream's, the
// database's, Redis's, the embeddings endpoint's, the OTLP endpoint's, the
// public URL, a jwks_url) is made fit to show: in health, in logs, in
// errors and in `toolsvc lint`. Operators put secrets in URLs (a password
// in the user info, an API key as a query value, a token in the fragment);
// whatever shows the URL must show it through [URL], and whatever shows
// text that may quote it (an error of the HTTP client, a parser's message)
// through [Text].
package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Mark replaces every secret.
const Mark = "REDACTED"

// URL returns raw with its secrets replaced by [Mark]: the whole user
// info (a user name alone is often a token, as in https://TOKEN@host),
// every query value (the keys stay, so an operator can tell which
// parameters are set) and the fragment. Scheme, host, port and path stay:
// they are what an operator needs to recognise the endpoint. A keyword
// connection string (PostgreSQL's "host=... password=...") has its
// password value replaced. Text that does not parse as a URL is not
// shown at all: it may be a URL whose secret could not be found.
func URL(raw string) string {
	if raw == "" {
		return ""
	}
	if !strings.Contains(raw, "://") {
		// A file path (SQLite), host:port, or a keyword DSN.
		return keywordSecret.ReplaceAllString(raw, "${1}"+Mark)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse, not shown)"
	}
	if u.User != nil {
		u.User = url.User(Mark)
	}
	if u.RawQuery != "" {
		u.RawQuery = redactQuery(u.RawQuery)
	}
	u.ForceQuery = false
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Mark, ""
	}
	return u.String()
}

// keywordSecret finds the value of a password (or sslpassword) keyword
// of a keyword/value connection string, quoted or not.
var keywordSecret = regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]+)`)

// redactQuery keeps each key of a raw query and replaces its value.
func redactQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok {
			parts[i] = k + "=" + Mark
		}
	}
	return strings.Join(parts, "&")
}

// Secrets returns the parts of raw that [URL] hides, as they may appear
// in text: raw and percent-decoded. The longest come first, so that
// replacing them in order never leaves a piece of a longer one behind.
// Values shorter than 3 characters are left out: replacing them would
// mangle unrelated text and they protect nothing.
func Secrets(raw string) []string {
	var out []string
	add := func(vs ...string) {
		for _, v := range vs {
			if len(v) >= 3 && !slices.Contains(out, v) {
				out = append(out, v)
			}
			if d, err := url.QueryUnescape(v); err == nil && len(d) >= 3 && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	if !strings.Contains(raw, "://") {
		for _, m := range keywordSecret.FindAllStringSubmatch(raw, -1) {
			add(strings.Trim(m[2], "'"))
		}
		return sortLongestFirst(out)
	}
	u, err := url.Parse(raw)
	if err != nil {
		add(raw)
		return sortLongestFirst(out)
	}
	if u.User != nil {
		add(u.User.Username())
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		if i := strings.Index(raw, "://"); i >= 0 {
			if at := strings.LastIndex(raw[i+3:], "@"); at >= 0 {
				add(raw[i+3 : i+3+at]) // the user info as written
			}
		}
	}
	for _, p := range strings.Split(u.RawQuery, "&") {
		if _, v, ok := strings.Cut(p, "="); ok {
			add(v)
		}
	}
	add(u.EscapedFragment(), u.Fragment)
	return sortLongestFirst(out)
}

func sortLongestFirst(s []string) []string {
	slices.SortStableFunc(s, func(a, b string) int { return len(b) - len(a) })
	return s
}

// Text returns text with every configured URL in urls shown as [URL]
// shows it, and every secret of theirs that is left (quoted apart from
// its URL, percent-decoded, in another order) replaced by [Mark]. It is
// for text that may quote a configured URL: an HTTP client's error, a
// parser's message.
func Text(text string, urls ...string) string {
	for _, raw := range urls {
		if raw == "" {
			continue
		}
		text = strings.ReplaceAll(text, raw, URL(raw))
		for _, s := range Secrets(raw) {
			text = strings.ReplaceAll(text, s, Mark)
		}
	}
	return text
}

// Command returns how a command line is shown: the program only, since
// its arguments may carry a token.
func Command(argv []string) string {
	switch len(argv) {
	case 0:
		return ""
	case 1:
		return argv[0]
	default:
		return argv[0] + " (arguments not shown)"
	}
}

// Error returns err with its text shown as [Text] shows it for urls;
// errors.Is and errors.As still see err. Nil for a nil err.
func Error(err error, urls ...string) error {
	if err == nil {
		return nil
	}
	return &redactedError{err: err, urls: urls}
}

type redactedError struct {
	err  error
	urls []string
}

func (e *redactedError) Error() string { return Text(e.err.Error(), e.urls...) }
func (e *redactedError) Unwrap() error { return e.err }
