package holdfast

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func isDeadlineExceeded(err error) bool {
	return err != nil && status.Code(err) == codes.DeadlineExceeded
}
