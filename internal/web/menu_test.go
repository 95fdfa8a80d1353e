package web_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/authspec"
	"github.com/finsvc/finsvc/internal/console"
	"github.com/finsvc/finsvc/internal/oauth"
	"github.com/finsvc/finsvc/internal/users"
)

// The navigation (each adapter's entries, joined as internal/app joins
// them) asks the operation policy: the users and developer pages show for
// the roles the spec lets list users and manage apps, nothing is decided
// here.
func TestMenuFollowsThePolicy(t *testing.T) {
	nav := slices.Concat(console.Nav, oauth.Nav)
	pol, err := authspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	keys := func(role string) string {
		var ks []string
		for _, it := range nav.Menu(pol, &users.User{ID: 1, Role: role}) {
			ks = append(ks, it.Key)
		}
		return strings.Join(ks, " ")
	}
	for role, want := range map[string]string{
		auth.RoleViewer: "webhooks acts account-security account password",
		auth.RoleMember: "webhooks acts account-security account password",
		auth.RoleAdmin:  "webhooks acts users audit security account-security developer account password",
	} {
		if got := keys(role); got != want {
			t.Errorf("%s sees %q, want %q", role, got, want)
		}
	}
	if m := nav.Menu(pol, nil); m != nil {
		t.Errorf("signed out: %v", m)
	}
	// A policy that let members manage apps would show them the page.
	rules := []auth.Rule{{Operation: "listUsers", Action: auth.Admin}, {Operation: "manageApps", Action: auth.Write, Page: true}}
	lenient, err := auth.NewPolicy(rules)
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, it := range nav.Menu(lenient, &users.User{ID: 1, Role: auth.RoleMember}) {
		ks = append(ks, it.Key)
	}
	if got := strings.Join(ks, " "); got != "webhooks acts account-security developer account password" {
		t.Errorf("member under a lenient policy sees %q", got)
	}
}
