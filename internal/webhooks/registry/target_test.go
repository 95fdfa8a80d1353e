package registry

import "testing"

func TestValidateTarget(t *testing.T) {
	ok := []string{
		"https://hooks.example.com/finsvc",
		"https://hooks.example.com:8443/a/b?c=d&e=f",
		"https://xn--bcher-kva.example/",
		"https://8.8.8.8/hook",
		"https://[2001:4860:4860::8888]/hook",
		"HTTPS://Hooks.Example.COM/",
	}
	bad := []string{
		"", "http://hooks.example.com/", "ftp://hooks.example.com/", "//hooks.example.com/", "hooks.example.com",
		"https://", "https:///path", "https://user@hooks.example.com/", "https://u:p@hooks.example.com/",
		"https://hooks.example.com/#x", "https://hooks.example.com:0/", "https://hooks.example.com:70000/",
		"https://hooks.example.com:/", "https://hooks .example.com/", "https://hooks.example.com/\n",
		"https://-bad-.example.com/", "https://a..b/", "https://127.0.0.1/", "https://10.1.2.3/",
		"https://192.168.0.1/", "https://169.254.169.254/", "https://[::1]/", "https://[fe80::1]/",
		"https://0.0.0.0/", "https://localhost/", "https://api.localhost/", "https://10.1/", "https://0x7f.1/",
		"mailto:x@example.com",
		// Finding 9: a trailing dot or capitals do not hide a local name.
		"https://LOCALHOST.:8443/", "https://localhost./", "https://API.LocalHost./x",
		"https://[::ffff:127.0.0.1]/", "https://100.64.0.1/",
	}
	for _, u := range ok {
		if _, msg := ValidateTarget(u, false); msg != "" {
			t.Errorf("%q refused: %s", u, msg)
		}
	}
	for _, u := range bad {
		if _, msg := ValidateTarget(u, false); msg == "" {
			t.Errorf("%q accepted", u)
		}
	}
	// Tests and demo lift the address rules and accept http.
	for _, u := range []string{"http://127.0.0.1:8080/hook", "https://localhost:9090/", "http://[::1]:1/"} {
		if _, msg := ValidateTarget(u, true); msg != "" {
			t.Errorf("allowPrivate: %q refused: %s", u, msg)
		}
	}
	if _, msg := ValidateTarget("ftp://127.0.0.1/", true); msg == "" {
		t.Error("allowPrivate accepted ftp")
	}
}

// The stored target has its scheme and host normalised; the rest is kept.
func TestValidateTargetNormalises(t *testing.T) {
	cases := map[string]string{
		"HTTPS://Hooks.Example.COM./a/B?c=D":  "https://hooks.example.com/a/B?c=D",
		"https://Hooks.Example.com.:8443/x":   "https://hooks.example.com:8443/x",
		"https://[2001:4860:4860::8888]/hook": "https://[2001:4860:4860::8888]/hook",
		"https://hooks.example.com/p%2Fq":     "https://hooks.example.com/p%2Fq",
	}
	for in, want := range cases {
		got, msg := ValidateTarget(in, false)
		if msg != "" || got != want {
			t.Errorf("ValidateTarget(%q) = %q, %q; want %q", in, got, msg, want)
		}
	}
}
