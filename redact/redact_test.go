package redact

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/XXXX": "https://hooks.slack.com/…",
		"https://user:XXXX@example.com/hook":          "https://example.com/…",
		"https://example.com/hook?token=XXXX":         "https://example.com/…",
		"https:///services/XXXX":                      "https:///…",
		"http://[::1/XXXX":                            "(URL not shown)",
	} {
		assert.Equal(t, want, URL(raw), raw)
	}
}

func TestCredentials(t *testing.T) {
	for raw, want := range map[string]string{
		"http://pushgateway:9091":                               "http://pushgateway:9091",
		"https://user:XXXX@pushgateway.example.com:9091/pg":     "https://pushgateway.example.com:9091/pg",
		"https://pushgateway.example.com:9091/?token=XXXX#XXXX": "https://pushgateway.example.com:9091/",
		"pushgateway:9091":                                      "pushgateway:9091",
		"http://[::1/XXXX":                                      "(URL not shown)",
	} {
		assert.Equal(t, want, Credentials(raw), raw)
	}
}

func TestMessages(t *testing.T) {
	const raw = "https://sweeper:s3cret@pg.example.com:9091/base?token=XXXX"
	messages := []string{
		"unexpected status code 500 while pushing to " + raw + "/metrics/job/operator-sweeper: oops",
		`Post "https://sweeper:s3cret@pg.example.com:9091/base?token=XXXX": dial tcp: refused`,
		"the server said: user sweeper:s3cret is not allowed at /base?token=XXXX",
		"password s3cret rejected",
	}
	for _, message := range messages {
		for _, got := range []string{Message(message, raw), CredentialsIn(message, raw)} {
			for _, secret := range []string{"s3cret", "XXXX"} {
				assert.NotContains(t, got, secret, "%q", got)
			}
		}
		assert.NotContains(t, Message(message, raw), "/base", "a webhook's path is its credential")
	}
	assert.Contains(t, CredentialsIn("pushing to "+raw+" failed", raw), "https://pg.example.com:9091/base", "where, without who")
	assert.Equal(t, "nothing here", Message("nothing here", ""))
}
