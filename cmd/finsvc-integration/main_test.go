package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestRunFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-secret") {
		t.Fatalf("--help: %v\n%s", err, out.String())
	}
	t.Setenv("FINSVC_INTEGRATION_WEBHOOK_SECRET", "")
	t.Setenv("FINSVC_INTEGRATION_TOKEN", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--finsvc", "http://x", "--token", "t"}, "secret is required"},
		{[]string{"--secret", "whsec_eA==", "--token", "t"}, "base URL"},
		{[]string{"--secret", "whsec_eA==", "--finsvc", "http://x"}, "access token"},
		{[]string{"--secret", "s", "--finsvc", "http://x", "--token", "t", "--tls-cert", "c"}, "go together"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--nope"}, "not defined"},
	} {
		out.Reset()
		err := run(tc.args, &out)
		if err == nil || !strings.Contains(err.Error()+out.String(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
