package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"testing"

	"google.golang.org/grpc/mem"
)

// The gate hands gRPC's own receive buffers from one side to the other without copying
// (codec.go): a buffer given back too early would show as a message with another's bytes.
func TestManyMessagesBothWaysArriveWholeAndInOrder(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), nil)
	conn := dial(t, address)
	const streams, each = 8, 500
	errs := make(chan error, streams)
	for s := range streams {
		go func() {
			errs <- func() error {
				stream, err := conn.NewStream(context.Background(), anyMethod, "/test.Echo/Echo")
				if err != nil {
					return err
				}
				random := rand.New(rand.NewPCG(uint64(s), 1))
				sent := make(chan []byte, each)
				go func() {
					for i := range each {
						size := []int{0, 1, 100, 4000, 16 << 10, 60 << 10}[random.IntN(6)]
						payload := make([]byte, size)
						for j := range payload {
							payload[j] = byte(random.Uint32())
						}
						if size > 0 {
							payload[0] = byte(i) // no two neighbours alike
						}
						sent <- payload
						if stream.SendMsg(&frame{data: mem.BufferSlice{mem.SliceBuffer(payload)}}) != nil {
							return
						}
					}
					_ = stream.CloseSend()
				}()
				for i := range each {
					got := new(frame)
					if err := stream.RecvMsg(got); err != nil {
						return err
					}
					if want := <-sent; !bytes.Equal(got.data.Materialize(), want) {
						t.Errorf("stream %d message %d: %d bytes came back, not the %d sent", s, i, got.data.Len(), len(want))
					}
				}
				if err := stream.RecvMsg(new(frame)); err != io.EOF {
					return err
				}
				return nil
			}()
		}()
	}
	for range streams {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
