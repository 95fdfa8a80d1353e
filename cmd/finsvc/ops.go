package main

import (
	"github.com/finsvc/finsvc/pkg/httpapi"
	"github.com/finsvc/finsvc/pkg/ops"
)

// wireOps adds metrics, the rate limit and /docs (pkg/ops). Call it last,
// after deps.Auth is set. The limiter's Redis connection, if any, lives as
// long as the process.
func wireOps(deps *httpapi.Deps) error {
	_, _, err := ops.Wire(deps)
	return err
}
