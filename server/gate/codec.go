package main

import "google.golang.org/grpc/mem"

// frame is one gRPC message as the bytes that came off the wire. The gate forwards every
// method of every service without knowing its types, so it never decodes what it carries.
type frame struct {
	data mem.BufferSlice
}

// free gives the frame's buffers back to gRPC's pool when the frame is not going to be sent
// (sending hands them over: gRPC frees them once written).
func (f *frame) free() {
	if f.data != nil {
		f.data.Free()
		f.data = nil
	}
}

// rawCodec moves frames without copying: Unmarshal keeps a reference to gRPC's receive
// buffers and Marshal hands that same reference to the sending side, which frees it. It is
// forced on both halves (grpc.ForceServerCodecV2, grpc.ForceCodecV2), so no registry
// lookup by content-subtype ever picks the protobuf codec for our frames.
type rawCodec struct{}

// Name is only used as a content-subtype on the upstream side when CallContentSubtype is not
// given; we always send "proto" there, which is what the Python server expects.
func (rawCodec) Name() string { return "ziggurat-raw" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f := v.(*frame)
	data := f.data
	f.data = nil // ownership passes to gRPC
	return data, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f := v.(*frame)
	data.Ref() // gRPC frees data when Unmarshal returns; keep it until it is forwarded
	f.data = data
	return nil
}
