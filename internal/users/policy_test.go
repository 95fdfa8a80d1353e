package users_test

import (
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/apperr"
	"github.com/finsvc/finsvc/internal/db"
	"github.com/finsvc/finsvc/internal/tenant"
	"github.com/finsvc/finsvc/internal/testdb"
	"github.com/finsvc/finsvc/internal/users"
)

// weakPasswords are refused everywhere a person chooses a password, with
// the reason they are (a fragment of the field message).
var weakPasswords = []struct{ password, why string }{
	{"password", "at least 12 characters"},
	{"12345678", "at least 12 characters"},
	{"        ", "at least 12 characters"},
	{"password1234", "commonly used password"},
	{"Qwerty123456", "commonly used password"},
	{"            ", "repetition"},
	{"éééééééééééé", "repetition"},
	{"abcdefghijklmnop", "repetition, a sequence"},
	{"Acme Holdings 2024!", "organization's name"},
	{"acmeholdings1", "organization's name"},
	{"kari.nordmann77", "email address"},
	{strings.Repeat("x", users.MaxPasswordLen+1), "at most 1024 characters"},
	{"ok\xffbut not text", "valid text"},
}

// goodPasswords pass, whatever their characters.
var goodPasswords = []string{
	"correct horse battery staple",
	"cantaloupe in a red wheelbarrow",
	"Tr0ub4dor&3 xyzzy",
	"blåbærsyltetøy på søndag",
	"xK9#mQ2$vL7p",
	"acme loves cantaloupe wheelbarrows", // the name, and enough besides
	strings.Repeat("cantaloupe wheelbarrow ", 45)[:users.MaxPasswordLen],
}

var acme = &tenant.Tenant{ID: 1, Slug: "acme-holdings", Name: "Acme Holdings"}

const email = "kari.nordmann@acme.example.com"

func TestCheckPassword(t *testing.T) {
	for _, tc := range weakPasswords {
		got := users.CheckPassword(tc.password, email, acme)
		if !strings.Contains(got, tc.why) {
			t.Errorf("CheckPassword(%.40q) = %q, want a refusal saying %q", tc.password, got, tc.why)
		}
	}
	for _, pw := range goodPasswords {
		if got := users.CheckPassword(pw, email, acme); got != "" {
			t.Errorf("CheckPassword(%.40q) = %q, want accepted", pw, got)
		}
	}
	// The organization and email words count only for their own accounts.
	if got := users.CheckPassword("Acme Holdings 2024!", "someone@else.example", &tenant.Tenant{Slug: "other", Name: "Other"}); got != "" {
		t.Errorf("another tenant's name refused for an unrelated account: %q", got)
	}
}

func TestPasswordHints(t *testing.T) {
	got := strings.Join(users.PasswordHints(" Kari.Nordmann@Acme.Example.com", acme), ",")
	for _, want := range []string{"kari.nordmann@acme.example.com", "kari.nordmann", "kari", "nordmann", "acme", "example", "acme-holdings", "acme holdings", "acmeholdings", "holdings"} {
		if !strings.Contains(","+got+",", ","+want+",") {
			t.Errorf("hints %q lack %q", got, want)
		}
	}
	if strings.Contains(","+got+",", ",com,") {
		t.Errorf("hints %q hold the top-level domain", got)
	}
}

// TestPasswordPolicyInStore: Create and SetPassword apply the policy with
// the tenant and email of the account, on both dialects; a generated
// password is not refused.
func TestPasswordPolicyInStore(t *testing.T) {
	testdb.Each(t, func(t *testing.T, d *db.DB) {
		tn := &tenant.Tenant{Slug: "acme-holdings", Name: "Acme Holdings"}
		if err := d.Create(tn).Error; err != nil {
			t.Fatal(err)
		}
		ctx := tenant.NewContext(t.Context(), tn)
		s := users.NewStore(d, users.WithHashParams(users.HashParams{MemoryKiB: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}))
		for i, tc := range weakPasswords {
			_, err := s.Create(ctx, email, "", "member", tc.password)
			if msg := fieldMsg(err, "password"); !strings.Contains(msg, tc.why) {
				t.Errorf("%d: Create(%.40q) = %v (password: %q), want Invalid saying %q", i, tc.password, err, msg, tc.why)
			}
		}
		u, err := s.Create(ctx, email, "", "member", "cantaloupe in a red wheelbarrow")
		if err != nil {
			t.Fatal(err)
		}
		// A context with the tenant id alone: the store finds the name.
		idOnly := tenant.NewContext(t.Context(), &tenant.Tenant{ID: tn.ID})
		for _, tc := range weakPasswords {
			if msg := fieldMsg(s.SetPassword(idOnly, u.ID, tc.password), "password"); !strings.Contains(msg, tc.why) {
				t.Errorf("SetPassword(%.40q): password %q, want %q", tc.password, msg, tc.why)
			}
		}
		for _, pw := range goodPasswords {
			if err := s.SetPassword(idOnly, u.ID, pw); err != nil {
				t.Errorf("SetPassword(%.40q) = %v", pw, err)
			}
		}
		if _, err := s.Authenticate(ctx, email, goodPasswords[len(goodPasswords)-1]); err != nil {
			t.Errorf("the longest password does not sign in: %v", err)
		}
		_, generated, err := s.CreateWithPassword(ctx, "ola@acme.example.com", "", "viewer", "")
		if err != nil || generated == "" {
			t.Fatalf("generated password: %q, %v", generated, err)
		}
		if _, _, err := s.CreateWithPassword(ctx, "per@acme.example.com", "", "viewer", "Qwerty123456"); fieldMsg(err, "password") == "" {
			t.Errorf("CreateWithPassword took a common password: %v", err)
		}
	})
}

func fieldMsg(err error, field string) string {
	var msgs []string
	if e, ok := err.(*apperr.Error); ok && apperr.Is(err, apperr.Invalid) {
		msgs = e.Fields[field]
	}
	return strings.Join(msgs, "; ")
}
