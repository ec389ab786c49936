package conformance

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
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

// ending is how stream ended: its RST_STREAM code, the GOAWAY that closed its connection,
// or the grpc-status of its trailers.
type ending struct {
	reset      bool
	goAway     bool
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
			if f.LastStreamID < stream || f.ErrCode != http2.ErrCodeNo {
				return ending{goAway: true, code: f.ErrCode}
			}
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

// closed reads frames until the gate closes the connection (true), or within passes (false).
func (c *rawClient) closed(within time.Duration) bool {
	_ = c.conn.SetReadDeadline(time.Now().Add(within))
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

// rawHeld is a raw HTTP/2 connection with calls that sent no message (held by the gate),
// and a reader that answers the gate's settings and pings and notes which calls ended.
type rawHeld struct {
	t      *testing.T
	c      *rawClient
	mu     sync.Mutex // writes
	next   uint32
	ended  chan uint32
	closed chan struct{} // closed when the connection is
	goAway atomic.Bool   // the gate sent GOAWAY
}

// alive tells whether the gate has neither closed the connection nor told it to go away.
func (h *rawHeld) alive() bool {
	select {
	case <-h.closed:
		return false
	default:
		return !h.goAway.Load()
	}
}

// holdRaw opens a connection to address with n held calls.
func holdRaw(t *testing.T, address string, n int) *rawHeld {
	t.Helper()
	h := &rawHeld{t: t, c: dialRaw(t, address), next: 1, ended: make(chan uint32, 2*n+16), closed: make(chan struct{})}
	for range n {
		h.openOne()
	}
	go h.read()
	return h
}

func (h *rawHeld) openOne() {
	h.mu.Lock()
	defer h.mu.Unlock()
	_ = h.c.tryHeaders(h.next, "/test.Echo/Echo", false)
	h.next += 2
}

func (h *rawHeld) read() {
	defer close(h.closed)
	for {
		frame, err := h.c.framer.ReadFrame()
		if err != nil {
			return
		}
		h.mu.Lock()
		switch f := frame.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = h.c.framer.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = h.c.framer.WritePing(true, f.Data)
			}
		case *http2.GoAwayFrame:
			h.goAway.Store(true)
		case *http2.RSTStreamFrame:
			h.ended <- f.StreamID
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				h.ended <- f.StreamID
			}
		}
		h.mu.Unlock()
	}
}

// refill opens a new call for each that the gate refused.
func (h *rawHeld) refill(*testing.T) {
	for {
		select {
		case <-h.ended:
			h.openOne()
		default:
			return
		}
	}
}
