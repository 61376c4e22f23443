module github.com/lanework/lanework/chronon

go 1.26

require (
	github.com/lanework/lanework/frontier v0.1.0
	github.com/lanework/lanework/pressure v0.1.0
	github.com/lanework/lanework/ringbuf v0.1.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	go.yaml.in/yaml/v3 v3.0.6
)
