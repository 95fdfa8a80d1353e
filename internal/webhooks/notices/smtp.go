package notices

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/wneessen/go-mail"
)

// SMTP sends messages through the server of an smtp:// URL
// (FINSVC_SMTP_URL): smtp://[user:password@]host[:port][?from=address],
// STARTTLS when the server offers it; smtps:// for TLS from the start
// (port 465 by default). Without from, messages come from
// finsvc@<host>.
type SMTP struct {
	client *mail.Client
	from   string
}

// NewSMTP reads rawURL.
func NewSMTP(rawURL string) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" {
		return nil, errors.New("notices: the SMTP URL must be smtp://[user:password@]host[:port][?from=address] or smtps://…")
	}
	opts := []mail.Option{mail.WithTLSPolicy(mail.TLSOpportunistic)}
	port := 587
	if u.Scheme == "smtps" {
		port = 465
		opts = []mail.Option{mail.WithSSL()}
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("notices: SMTP port %q: %w", p, err)
		}
	}
	opts = append(opts, mail.WithPort(port))
	if u.User != nil {
		pw, _ := u.User.Password()
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthPlain), mail.WithUsername(u.User.Username()), mail.WithPassword(pw))
	}
	c, err := mail.NewClient(u.Hostname(), opts...)
	if err != nil {
		return nil, fmt.Errorf("notices: SMTP client: %w", err)
	}
	from := u.Query().Get("from")
	if from == "" {
		from = "finsvc@" + u.Hostname()
	}
	return &SMTP{client: c, from: from}, nil
}

// Send sends m, one message to all its recipients.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	msg := mail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("notices: from %q: %w", s.from, err)
	}
	if err := msg.To(m.To...); err != nil {
		return fmt.Errorf("notices: recipients: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetBodyString(mail.TypeTextPlain, m.Body)
	return s.client.DialAndSendWithContext(ctx, msg)
}
