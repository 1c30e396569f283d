module github.com/holdfast/holdfast/clients/go/internal/modproxy

go 1.25.0

require golang.org/x/mod v0.40.0
