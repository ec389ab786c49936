package main

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A call's metadata, counted as HTTP/2 and gRPC core count it: name + value + 32 per field.
//
// gRPC-Go would take 16 MiB of it per call, and the gate holds a call's metadata while it
// waits for the first message: thousands of held calls of megabytes each. The Python server
// refuses more than maxMetadataBytes itself (gRPC core's hard limit; over its 8 KiB soft
// limit it refuses some) with RESOURCE_EXHAUSTED, so the gate refuses the same at once, before
// holding anything; up to that it forwards and lets the Python server decide as it would
// without the gate. maxHeaderListBytes is the transport's cap (HTTP/2
// SETTINGS_MAX_HEADER_LIST_SIZE), room above the refusal: a header block over it is never
// kept (the stream is reset, or the connection closed when a frame is far over it).
const (
	maxMetadataBytes   = 16 << 10
	maxHeaderListBytes = 64 << 10
)

// metadataBytes is the size of md the way the limit counts it.
func metadataBytes(md metadata.MD) int {
	size := 0
	for key, values := range md {
		for _, value := range values {
			size += len(key) + len(value) + 32
		}
	}
	return size
}

// metadataTooLarge is gRPC core's refusal of metadata over its hard limit.
func metadataTooLarge(size int) error {
	return status.Errorf(codes.ResourceExhausted,
		"received metadata size exceeds hard limit (%d vs. %d)", size, maxMetadataBytes)
}
