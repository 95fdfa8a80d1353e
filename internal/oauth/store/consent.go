package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/finsvc/finsvc/internal/audit"
	"github.com/finsvc/finsvc/internal/tenant"
)

// Consent is a user's remembered grant of scopes to an app.
type Consent struct {
	TenantID  int64  `gorm:"primaryKey;autoIncrement:false"`
	UserID    int64  `gorm:"primaryKey;autoIncrement:false"`
	ClientID  string `gorm:"primaryKey"`
	Scopes    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TableName pins the table name.
func (Consent) TableName() string { return "oauth_consents" }

// HasConsent reports whether the user already granted the app every scope
// in scopes.
func (s *Store) HasConsent(ctx context.Context, userID int64, clientID string, scopes []string) (bool, error) {
	var c Consent
	err := tenant.Scope(ctx, s.conn(ctx)).Where("user_id = ? AND client_id = ?", userID, clientID).Take(&c).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("oauth store: get consent: %w", err)
	}
	have := SplitScopes(c.Scopes)
	for _, sc := range scopes {
		if !slices.Contains(have, sc) {
			return false, nil
		}
	}
	return true, nil
}

// SaveConsent remembers that the user granted scopes to the app (adding to
// what was granted before), and records the grant, by the user, in the
// audit log.
func (s *Store) SaveConsent(ctx context.Context, userID int64, clientID string, scopes []string) error {
	return s.db.Tx(ctx, func(tx *gorm.DB) error {
		var c Consent
		err := s.db.ForUpdate(tenant.Scope(ctx, tx)).Where("user_id = ? AND client_id = ?", userID, clientID).Take(&c).Error
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return fmt.Errorf("oauth store: get consent: %w", err)
		}
		merged := SplitScopes(c.Scopes)
		for _, sc := range scopes {
			if !slices.Contains(merged, sc) {
				merged = append(merged, sc)
			}
		}
		row := Consent{TenantID: tenant.ID(ctx), UserID: userID, ClientID: clientID, Scopes: strings.Join(merged, " ")}
		err = tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "tenant_id"}, {Name: "user_id"}, {Name: "client_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"scopes", "updated_at"}),
		}).Create(&row).Error
		if err != nil {
			return fmt.Errorf("oauth store: save consent: %w", err)
		}
		return audit.Record(ctx, tx, audit.Entry{Action: audit.ConsentGranted, TargetType: audit.TargetApp, TargetID: clientID,
			Actor: audit.UserActor(userID)})
	})
}

// AuthorizedApp is an app a user consented to, for /account/apps.
type AuthorizedApp struct {
	ClientID  string
	Name      string
	Scopes    string
	GrantedAt time.Time
}

// AuthorizedApps lists the apps the user consented to, by name.
func (s *Store) AuthorizedApps(ctx context.Context, userID int64) ([]AuthorizedApp, error) {
	var apps []AuthorizedApp
	err := tenant.Scope(ctx, s.conn(ctx).Table("oauth_consents")).
		Select("oauth_consents.client_id AS client_id, oauth_clients.name AS name, oauth_consents.scopes AS scopes, oauth_consents.updated_at AS granted_at").
		Joins("JOIN oauth_clients ON oauth_clients.tenant_id = oauth_consents.tenant_id AND oauth_clients.id = oauth_consents.client_id").
		Where("oauth_consents.user_id = ?", userID).
		Order("oauth_clients.name, oauth_consents.client_id").
		Scan(&apps).Error
	if err != nil {
		return nil, fmt.Errorf("oauth store: list authorized apps: %w", err)
	}
	return apps, nil
}
