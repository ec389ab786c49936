package main

import (
	"context"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// awkwardStatus has what a status can carry that a proxy could mangle: a message with
// percent signs, new lines and non-ASCII text, several details, one of a type the gate has
// never heard of.
func awkwardStatus(t *testing.T) *spb.Status {
	t.Helper()
	info, err := anypb.New(&errdetails.ErrorInfo{Reason: "NOT_YOUR_TURN", Domain: "ziggurat",
		Metadata: map[string]string{"seat": "2", "note": "ü %41"}})
	if err != nil {
		t.Fatal(err)
	}
	retry, err := anypb.New(&errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	unknown := &anypb.Any{TypeUrl: "type.googleapis.com/ziggurat.future.Thing", Value: []byte{0x0a, 0x03, 0xff, 0x00, 0x01}}
	return &spb.Status{
		Code:    int32(codes.FailedPrecondition),
		Message: "100% not yours: ü\nsecond line\t%2F \x7f",
		Details: []*anypb.Any{info, retry, unknown},
	}
}

func TestStatusHeadersAndTrailersComeThroughByteForByte(t *testing.T) {
	want := awkwardStatus(t)
	header := metadata.MD{"x-h": {"one", "two"}, "x-h-bin": {"\x00\xff\x01"}}
	trailer := metadata.MD{"x-t": {"ü"}, "x-t-bin": {"\xff\x00"}}
	target := startStaticUpstream(t, func(_ any, stream grpc.ServerStream) error {
		if err := stream.RecvMsg(new(frame)); err != nil {
			return err
		}
		if err := stream.SendHeader(header); err != nil {
			return err
		}
		if err := stream.SendMsg(bytesFrame("a message before the status")); err != nil {
			return err
		}
		stream.SetTrailer(trailer)
		return status.FromProto(want).Err()
	})
	_, address := startGate(t, target, nil)
	stream := open(t, context.Background(), dial(t, address), "/test.Status/Awkward")
	if err := stream.SendMsg(bytesFrame("x")); err != nil {
		t.Fatal(err)
	}
	if err := stream.RecvMsg(new(frame)); err != nil {
		t.Fatal(err)
	}
	got := status.Convert(recvErr(t, stream)).Proto()
	if !proto.Equal(got, want) {
		t.Fatalf("status\n%v\nwant\n%v", got, want)
	}
	gotHeader, _ := stream.Header()
	for key, values := range header {
		if !equal(gotHeader.Get(key), values) {
			t.Fatalf("header %s: %q, want %q", key, gotHeader.Get(key), values)
		}
	}
	for key, values := range trailer {
		if !equal(stream.Trailer().Get(key), values) {
			t.Fatalf("trailer %s: %q, want %q", key, stream.Trailer().Get(key), values)
		}
	}
}
