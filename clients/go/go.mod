module github.com/finsvc/finsvc/clients/go

go 1.26.0

require (
	github.com/oapi-codegen/runtime v1.8.0
	go.yaml.in/yaml/v3 v3.0.5
	golang.org/x/oauth2 v0.37.0
)

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
)
