package baselines

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// GatewayPath is the REST route of the echo baseline (POST, JSON body).
const GatewayPath = "/v1/echo"

// NewGateway returns a bare grpc-gateway mux whose POST /v1/echo calls the
// echo method on conn. The handler is the one protoc-gen-grpc-gateway
// generates for `post: "/v1/echo" body: "*"`, written out by hand.
func NewGateway(conn grpc.ClientConnInterface) (*runtime.ServeMux, error) {
	mux := runtime.NewServeMux()
	err := mux.HandlePath(http.MethodPost, GatewayPath, func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		inbound, outbound := runtime.MarshalerForRequest(mux, r)
		annotated, err := runtime.AnnotateContext(ctx, mux, r, EchoMethod, runtime.WithHTTPPathPattern(GatewayPath))
		if err != nil {
			runtime.HTTPError(ctx, mux, outbound, w, r, err)
			return
		}
		var req wrapperspb.StringValue
		if err := inbound.NewDecoder(r.Body).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
			runtime.HTTPError(annotated, mux, outbound, w, r, status.Error(codes.InvalidArgument, err.Error()))
			return
		}
		var md runtime.ServerMetadata
		resp := new(wrapperspb.StringValue)
		err = conn.Invoke(annotated, EchoMethod, &req, resp, grpc.Header(&md.HeaderMD), grpc.Trailer(&md.TrailerMD))
		annotated = runtime.NewServerMetadataContext(annotated, md)
		if err != nil {
			runtime.HTTPError(annotated, mux, outbound, w, r, err)
			return
		}
		runtime.ForwardResponseMessage(annotated, mux, outbound, w, r, resp)
	})
	return mux, err
}
