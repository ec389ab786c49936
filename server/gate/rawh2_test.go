package main

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawClient speaks HTTP/2 frame by frame, as a hostile client would: header names and sizes,
// trailers and orders that no gRPC library would send.
type rawClient struct {
	t      *testing.T
	conn   net.Conn
	framer *http2.Framer
	header bytes.Buffer
	enc    *hpack.Encoder
}

func dialRaw(t *testing.T, address string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c := &rawClient{t: t, conn: conn, framer: http2.NewFramer(conn, conn)}
	c.enc = hpack.NewEncoder(&c.header)
	c.framer.MaxHeaderListSize = 1 << 20
	c.framer.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := c.framer.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// headers sends a HEADERS frame (with CONTINUATIONs when large) of a gRPC call to path, and
// then fields, as they are given (no lower-casing, repeats kept).
func (c *rawClient) headers(stream uint32, path string, end bool, fields ...string) {
	c.t.Helper()
	if err := c.tryHeaders(stream, path, end, fields...); err != nil {
		c.t.Fatal(err)
	}
}

// tryHeaders is headers, with the error of writing them (the gate may close the connection
// before a large block is all written).
func (c *rawClient) tryHeaders(stream uint32, path string, end bool, fields ...string) error {
	c.header.Reset()
	if path != "" {
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", path},
			{":authority", "gate"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
	}
	for i := 0; i+1 < len(fields); i += 2 {
		_ = c.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	block := c.header.Bytes()
	const most = 16 << 10 // the largest frame HTTP/2 allows without a larger setting
	first := block[:min(len(block), most)]
	block = block[len(first):]
	err := c.framer.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: first,
		EndStream: end, EndHeaders: len(block) == 0})
	for err == nil && len(block) > 0 {
		next := block[:min(len(block), most)]
		block = block[len(next):]
		err = c.framer.WriteContinuation(stream, len(block) == 0, next)
	}
	return err
}

// message sends one gRPC message (length-prefixed) on stream.
func (c *rawClient) message(stream uint32, payload string, end bool) {
	c.t.Helper()
	n := len(payload)
	data := append([]byte{0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, payload...)
	if err := c.framer.WriteData(stream, end, data); err != nil {
		c.t.Fatal(err)
	}
}

// ending is how stream ended: its RST_STREAM code, or the grpc-status of its trailers.
type ending struct {
	reset      bool
	code       http2.ErrCode
	grpcStatus string
}

// end reads frames (answering pings and settings) until stream ends.
func (c *rawClient) end(stream uint32) ending {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		frame, err := c.framer.ReadFrame()
		if err != nil {
			c.t.Fatalf("reading stream %d: %v", stream, err)
		}
		switch f := frame.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.framer.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = c.framer.WritePing(true, f.Data)
			}
		case *http2.GoAwayFrame:
			c.t.Fatalf("the gate closed the connection (%v) before stream %d ended", f.ErrCode, stream)
		case *http2.RSTStreamFrame:
			if f.StreamID == stream {
				return ending{reset: true, code: f.ErrCode}
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == stream && f.StreamEnded() {
				for _, field := range f.RegularFields() {
					if field.Name == "grpc-status" {
						return ending{grpcStatus: field.Value}
					}
				}
				return ending{}
			}
		}
	}
}

// closed reads frames until the gate closes the connection (true), or 10 s pass (false).
func (c *rawClient) closed() bool {
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		frame, err := c.framer.ReadFrame()
		if err != nil {
			return !isTimeout(err)
		}
		if _, ok := frame.(*http2.GoAwayFrame); ok {
			return true
		}
	}
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
