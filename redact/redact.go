// Package redact keeps credentials out of what operator-sweeper prints, logs, pushes and notifies.
// A URL it is given may hold a credential: a user and password, a token in its query, or, for a
// webhook such as Slack's, the path itself. What is shown of it, and of any message that quotes it,
// holds none of them.
package redact

import (
	"net/url"
	"strings"
)

// URL shows of a webhook's URL, whose path is its credential, what may be logged:
// scheme://host/…; "(URL not shown)" if it does not parse.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(URL not shown)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// Credentials shows of a URL whose path is no secret (a Pushgateway's) what may be logged: all but
// its user, password, query and fragment; "(URL not shown)" if it does not parse.
func Credentials(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(URL not shown)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// Message takes out of message every part of a webhook's URL raw that may be a secret: the whole
// URL (an HTTP client's errors quote it), its user and password, its path and query (a server's
// answer may quote the path it was asked for, "Cannot POST /services/T000/B000/secret").
func Message(message, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return scrub(message, raw, URL(raw), nil)
	}
	return scrub(message, raw, URL(raw), append(userinfo(u), u.RawQuery, u.EscapedPath(), u.Path, u.Fragment))
}

// CredentialsIn takes out of message the credentials of a URL raw whose path is no secret: its
// user and password, query and fragment; the whole URL is shown as Credentials shows it.
func CredentialsIn(message, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return scrub(message, raw, Credentials(raw), nil)
	}
	return scrub(message, raw, Credentials(raw), append(userinfo(u), u.RawQuery, u.Fragment))
}

// userinfo are the forms the user and password of u may take in a message.
func userinfo(u *url.URL) []string {
	if u.User == nil {
		return nil
	}
	password, _ := u.User.Password()
	return []string{u.User.String() + "@", u.User.String(), password}
}

// scrub replaces raw by shown in message, then every secret by "…".
func scrub(message, raw, shown string, secrets []string) string {
	if raw == "" {
		return message
	}
	message = strings.ReplaceAll(message, raw, shown)
	for _, secret := range secrets {
		if len(secret) > 1 { // a path of "/" holds nothing
			message = strings.ReplaceAll(message, secret, "…")
		}
	}
	return message
}
