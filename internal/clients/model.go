// Package clients stores the tenant's client records.
package clients

import (
	"strings"
	"time"

	"github.com/finsvc/finsvc/internal/money"
)

// Client is a client record. CreditLimit is exact: NUMERIC on PostgreSQL and
// canonical decimal text on SQLite, never float64.
type Client struct {
	TenantID    int64         `gorm:"primaryKey;autoIncrement:false"`
	ID          int64         `gorm:"primaryKey;autoIncrement:false"`
	CompanyName string        `gorm:"not null"`
	OrgNumber   string        `gorm:"not null"`
	Country     string        `gorm:"not null"`
	CreditLimit money.Decimal `gorm:"type:numeric(20,2);not null"`
	// NameKey is CompanyName folded to lower case, what the q filter
	// matches by prefix (migration 00095). Set by NewNameKey.
	NameKey   string `gorm:"column:name_key;not null"`
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NameKey folds a company name (or a prefix of one) the way name_key
// stores it.
func NameKey(s string) string { return strings.ToLower(s) }

// TableName pins the table.
func (Client) TableName() string { return "clients" }
