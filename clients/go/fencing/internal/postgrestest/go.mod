module github.com/holdfast/holdfast/clients/go/fencing/internal/postgrestest

go 1.25.0

require (
	github.com/holdfast/holdfast/clients/go v0.1.0
	github.com/lib/pq v1.12.3
)

require (
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260706201446-f0a921348800 // indirect
	google.golang.org/grpc v1.84.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/holdfast/holdfast/clients/go => ../../..
