package server

import (
	"strings"
	"testing"
)

// TestConfigErrorsRedactURLs: a configuration error that quotes a URL
// quotes it redacted.
func TestConfigErrorsRedactURLs(t *testing.T) {
	c := Defaults()
	c.Redis = "http://user:pwsecret42@127.0.0.1:6379/0?token=querysecret42#fragsecret42"
	err := c.Complete()
	if err == nil || !strings.Contains(err.Error(), "redis") || !strings.Contains(err.Error(), "REDACTED") {
		t.Fatalf("Complete = %v, want the redis URL refused, redacted", err)
	}
	for _, s := range []string{"pwsecret42", "querysecret42", "fragsecret42", "user"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("Complete's error shows %q: %v", s, err)
		}
	}
}
