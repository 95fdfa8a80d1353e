package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/finsvc/finsvc/internal/acts/actstest"
	"github.com/finsvc/finsvc/internal/apitest"
	"github.com/finsvc/finsvc/internal/auth"
	"github.com/finsvc/finsvc/internal/templates"
	"github.com/finsvc/finsvc/internal/testdb"
)

var rowRE = regexp.MustCompile(`<tr data-uuid="([^"]+)"`)

// listed is the act UUIDs of an acts page, in order.
func listed(body string) []string {
	var out []string
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

var olderRE = regexp.MustCompile(`href="(/console/acts\?[^"]*before=[^"]*)" id="older"`)

// TestActsList: the acts list finds acts by title and client name,
// filters by status, template and client, pages by cursor without losing
// or repeating an act (also when acts are created between pages), says
// what is wrong with a bad filter beside it (400, never 500), and never
// lists another tenant's acts, even when asked for its client.
func TestActsList(t *testing.T) {
	for _, dialect := range testdb.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			env := newEnv(t, apitest.WithDB(testdb.Open(t, dialect)))
			acme, other := newOrg(t, env, "acme"), newOrg(t, env, "other")
			store := env.App.Services().Acts
			member := &auth.Principal{TenantID: acme.Tenant.ID, UserID: acme.member.id, Role: auth.RoleMember}
			acmeAB := actstest.Client(t, env.DB, acme.Ctx, "Acme AB")
			birch := actstest.Client(t, env.DB, acme.Ctx, "Birch Oy")
			f := actstest.F{Key: "note", Type: "text", Source: templates.SourceManual}
			credit := actstest.Template(t, env.DB, acme.Ctx, "Credit review", f)
			yearly := actstest.Template(t, env.DB, acme.Ctx, "Year end", f)
			var all, final, ofBirch, ofCredit []string
			for i := range 30 {
				cl, tpl := acmeAB, yearly
				if i%2 == 1 {
					cl = birch
				}
				if i%3 == 0 {
					tpl = credit
				}
				d, err := store.Create(acme.Ctx, member, cl.ID, tpl.ID, fmt.Sprintf("Act %02d", i))
				if err != nil {
					t.Fatal(err)
				}
				id := d.Act.UUID.String()
				if i%5 == 0 {
					if _, err := store.Finalize(acme.Ctx, member, d.Act.UUID); err != nil {
						t.Fatal(err)
					}
					final = append([]string{id}, final...)
				}
				if cl.ID == birch.ID {
					ofBirch = append([]string{id}, ofBirch...)
				}
				if tpl.ID == credit.ID {
					ofCredit = append([]string{id}, ofCredit...)
				}
				all = append([]string{id}, all...)
			}
			wild, err := store.Create(acme.Ctx, member, acmeAB.ID, yearly.ID, "Quarterly close 100%_done")
			if err != nil {
				t.Fatal(err)
			}
			all = append([]string{wild.Act.UUID.String()}, all...)
			// The other tenant has a client and an act of the same names
			// and, ids being per tenant, the same numbers.
			oc := actstest.Client(t, env.DB, other.Ctx, "Birch Oy")
			ot := actstest.Template(t, env.DB, other.Ctx, "Credit review", f)
			otherAct, err := store.Create(other.Ctx, &auth.Principal{TenantID: other.Tenant.ID, UserID: other.member.id, Role: auth.RoleMember},
				oc.ID, ot.ID, "Quarterly close 100%_done")
			if err != nil {
				t.Fatal(err)
			}
			foreign := otherAct.Act.UUID.String()

			c := acme.client(t)
			c.login(acme.viewer)
			get := func(path string, want int) resp {
				t.Helper()
				r := c.do("GET", path, nil)
				if r.code != want {
					t.Fatalf("GET %s: %d, want %d: %s", path, r.code, want, r.body)
				}
				if strings.Contains(r.body, foreign) {
					t.Fatalf("GET %s lists the other tenant's act", path)
				}
				return r
			}
			// pages follows the "Older acts" links from path and returns
			// every act listed.
			pages := func(path string, between func()) []string {
				t.Helper()
				var got []string
				for n := 0; path != ""; n++ {
					r := get(path, http.StatusOK)
					got = append(got, listed(r.body)...)
					path = ""
					if m := olderRE.FindStringSubmatch(r.body); m != nil {
						path = strings.ReplaceAll(m[1], "&amp;", "&")
						if between != nil {
							between()
						}
					}
					if n > 10 {
						t.Fatal("too many pages")
					}
				}
				return got
			}
			later := 0
			got := pages("/console/acts", func() {
				// An act created between pages is on the first page, not
				// pushed into the next one.
				if _, err := store.Create(acme.Ctx, member, acmeAB.ID, yearly.ID, "Created meanwhile "+strconv.Itoa(later)); err != nil {
					t.Fatal(err)
				}
				later++
			})
			if !slices.Equal(got, all) || later != 1 {
				t.Fatalf("paging: %d acts over the pages (%d created meanwhile), want %d in order", len(got), later, len(all))
			}
			for _, tc := range []struct {
				name, query string
				want        []string
			}{
				{"title", "q=quarterly", all[:1]},
				{"wildcards are text", "q=" + url.QueryEscape("100%_"), all[:1]},
				{"percent alone", "q=" + url.QueryEscape("%"), all[:1]},
				{"client name", "q=birch", ofBirch},
				{"client name and status", "q=BIRCH&status=final", intersect(ofBirch, final)},
				{"status", "status=final", final},
				{"template", "template=" + strconv.FormatInt(credit.ID, 10), ofCredit},
				{"client", "client=" + strconv.FormatInt(birch.ID, 10), ofBirch},
				{"client and template", fmt.Sprintf("client=%d&template=%d", birch.ID, credit.ID), intersect(ofBirch, ofCredit)},
				{"nothing", "q=nothing+like+this", nil},
			} {
				if got := pages("/console/acts?"+tc.query, nil); !slices.Equal(got, tc.want) {
					t.Errorf("%s (%s): %d acts %v, want %d %v", tc.name, tc.query, len(got), got, len(tc.want), tc.want)
				}
			}
			r := get(fmt.Sprintf("/console/acts?client=%d", birch.ID), http.StatusOK)
			if !strings.Contains(r.body, "<strong>Birch Oy</strong>") {
				t.Error("the client filter does not name the client")
			}
			// A row links to its client's acts.
			if !strings.Contains(r.body, fmt.Sprintf(`href="/console/acts?client=%d"`, birch.ID)) {
				t.Error("no link to the client's acts")
			}

			for _, tc := range []struct{ query, field, msg string }{
				{"status=nope", "status", "Choose draft or final."},
				{"template=abc", "template", "Choose a template from the list."},
				{"client=-1", "client", "A client is chosen by its number"},
				{"before=x", "before", "This page link is broken"},
				{"q=" + strings.Repeat("x", 201), "q", "Search for at most 200 characters."},
				{"uuid=nope", "uuid", "This is not an act UUID"},
				// The other tenant's client has the same number as one of
				// acme's: asking for a number acme lacks names no one.
				{fmt.Sprintf("client=%d", oc.ID+1000), "client", "There is no such client."},
			} {
				r := get("/console/acts?"+tc.query, http.StatusBadRequest)
				if !strings.Contains(r.body, `id="`+tc.field+`-error">`+tc.msg) {
					t.Errorf("%s: no message %q beside %s", tc.query, tc.msg, tc.field)
				}
				if n := len(listed(r.body)); n != 25 {
					t.Errorf("%s: %d acts listed without the bad filter, want a full page", tc.query, n)
				}
			}
			if r := c.do("GET", "/console/acts?uuid="+all[3], nil); r.code != http.StatusSeeOther || r.location != "/console/acts/"+all[3] {
				t.Fatalf("lookup by UUID: %d %q", r.code, r.location)
			}
		})
	}
}

func intersect(a, b []string) []string {
	var out []string
	for _, s := range a {
		if slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
