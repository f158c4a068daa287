package redact_test

import (
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/redact"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", ""},
		{"nothing secret", "http://127.0.0.1:9292/mcp", "http://127.0.0.1:9292/mcp"},
		{"password", "postgres://app:s3cret@db:5432/toolsvc", "postgres://REDACTED@db:5432/toolsvc"},
		{"user as token", "https://ghp_token@host/x", "https://REDACTED@host/x"},
		{"empty user", "redis://:pw@127.0.0.1:6379/0", "redis://REDACTED@127.0.0.1:6379/0"},
		{"query values", "http://10.0.3.7:9292/mcp?apikey=abc&mode=x&flag", "http://10.0.3.7:9292/mcp?apikey=REDACTED&mode=REDACTED&flag"},
		{"fragment", "https://h/p#token=xyz", "https://h/p#REDACTED"},
		{"everything", "https://u:p@h:1/p?k=v#f", "https://REDACTED@h:1/p?k=REDACTED#REDACTED"},
		{"sqlite path", "data/toolsvc.db", "data/toolsvc.db"},
		{"keyword dsn", "host=db user=app password=s3cret dbname=x", "host=db user=app password=REDACTED dbname=x"},
		{"keyword dsn quoted", "host=db password='a b' sslpassword=k", "host=db password=REDACTED sslpassword=REDACTED"},
		{"does not parse", "http://h/%zz?k=v", "(a URL that does not parse, not shown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := redact.URL(tc.in); got != tc.want {
				t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	raw := "http://user:pa%24s@10.0.3.7:9292/mcp?apikey=k3y-value&x=a%20b#frag-secret"
	for _, text := range []string{
		`Post "` + raw + `": dial tcp: connection refused`,
		`Post "http://10.0.3.7:9292/mcp?x=a%20b&apikey=k3y-value": refused`, // another order
		`the key k3y-value, the password pa$s, a b and frag-secret quoted apart`,
	} {
		got := redact.Text(text, raw)
		for _, secret := range []string{"k3y-value", "pa$s", "pa%24s", "frag-secret", "a%20b", "user"} {
			if strings.Contains(got, secret) {
				t.Errorf("Text(%q) = %q: %q is still there", text, got, secret)
			}
		}
		if !strings.Contains(got, redact.Mark) {
			t.Errorf("Text(%q) = %q: nothing replaced", text, got)
		}
	}
	if got := redact.Text("no url here", ""); got != "no url here" {
		t.Errorf("Text with no URL = %q", got)
	}
}

func TestCommand(t *testing.T) {
	if got := redact.Command([]string{"server", "--token=abc"}); strings.Contains(got, "abc") || !strings.HasPrefix(got, "server") {
		t.Errorf("Command = %q", got)
	}
	if got := redact.Command([]string{"server"}); got != "server" {
		t.Errorf("Command = %q", got)
	}
}
