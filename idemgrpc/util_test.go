package idemgrpc_test

import (
	"context"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func firstMD(ctx context.Context, name string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// reasonOf returns the ErrorInfo reason of err's status, or "".
func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Reason
		}
	}
	return ""
}
