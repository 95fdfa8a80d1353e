package main

import (
	"regexp"
	"strings"
	"testing"
)

// serve runs a delivery worker and drains it on shutdown.
func TestServeRunsDeliveryWorker(t *testing.T) {
	_, stderr, stop := startCmd(t, map[string]string{"FINSVC_DATA_DIR": t.TempDir(), "FINSVC_LOG_FORMAT": "json"}, "serve", "--addr", "127.0.0.1:0")
	addrRE := regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)
	waitFor(t, "listening log line", func() bool { return addrRE.MatchString(stderr.String()) })
	if got := stop(); got != 0 {
		t.Fatalf("serve exit status = %d", got)
	}
	if logs := stderr.String(); !strings.Contains(logs, `"msg":"webhook deliveries stopped"`) {
		t.Fatalf("no delivery worker shutdown in the logs:\n%s", logs)
	}
}
