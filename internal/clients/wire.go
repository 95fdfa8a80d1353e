package clients

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/finsvc/finsvc/gen/models"
	"github.com/finsvc/finsvc/internal/webhooks/outbox"
)

// API renders c as the API and the client.* events carry it.
func (c *Client) API() models.Client {
	return models.Client{
		Id: c.ID, CompanyName: c.CompanyName, OrgNumber: c.OrgNumber, Country: c.Country,
		CreditLimit: c.CreditLimit, CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC(),
	}
}

func (s *Store) outbox() *outbox.Outbox {
	if s.Outbox == nil {
		return &outbox.Outbox{}
	}
	return s.Outbox
}

// emit records a client.* event about c inside tx, the change's
// transaction: a rolled-back change leaves no event.
func (s *Store) emit(ctx context.Context, tx *gorm.DB, kind string, c *Client, at time.Time) error {
	_, err := s.outbox().Emit(ctx, tx, outbox.Event{Kind: kind, OccurredAt: at, Data: models.ClientEventPayload{Client: c.API()}})
	return err
}
