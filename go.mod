module github.com/custos-dev/custos

go 1.26.10

require (
	github.com/compose-spec/compose-go/v2 v2.16.2 // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/sashabaranov/go-openai v1.43.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/temporalio/ui-server/v2 v2.56.4 // indirect
	go.temporal.io/sdk v1.50.0 // indirect
	go.temporal.io/server v1.32.2 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
