module github.com/finsvc/finsvc/clients/ogen

go 1.26.8

require (
	github.com/go-faster/errors v0.8.0
	github.com/go-faster/jx v1.2.0
	github.com/google/uuid v1.6.0
	github.com/ogen-go/ogen v1.25.0
	github.com/shopspring/decimal v1.4.0
)

require (
	github.com/dlclark/regexp2 v1.12.0 // indirect
	github.com/fatih/color v1.19.0 // indirect
	github.com/ghodss/yaml v1.0.0 // indirect
	github.com/go-faster/yaml v0.4.6 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/segmentio/asm v1.2.1 // indirect
	github.com/yuin/goldmark v1.8.6 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/exp v0.0.0-20230725093048-515e97ebf090 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)

tool github.com/ogen-go/ogen/cmd/ogen
