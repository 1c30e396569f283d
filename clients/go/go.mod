module github.com/holdfast/holdfast/clients/go

// The versions Debian 12 ships (golang-google-grpc-dev, golang-google-protobuf-dev,
// golang-github-golang-protobuf-1-5-dev; for fencing/fenceredis golang-github-gomodule-redigo-dev,
// for the fencing tests golang-github-lib-pq-dev); go.sh builds against those in GOPATH mode.
go 1.19

require (
	github.com/golang/protobuf v1.5.2
	github.com/gomodule/redigo v1.8.3
	github.com/lib/pq v1.10.7
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)
