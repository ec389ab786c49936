package main

import (
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// The limits gRPC-Go enforces through HTTP/2 settings are what a client's first SETTINGS
// frame from the gate says: a client holds its calls beyond --max-streams-per-connection
// (unrefused, until one ends), sends no more metadata than the cap, no more per stream
// than the fixed window.
func TestTheGateAdvertisesItsStreamMetadataAndWindowLimits(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), func(c *config) { c.maxStreamsPerConnection = 7 })
	c := dialRaw(t, address)
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := c.framer.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	settings, ok := frame.(*http2.SettingsFrame)
	if !ok || settings.IsAck() {
		t.Fatalf("the gate's first frame is %v, want its SETTINGS", frame)
	}
	for id, want := range map[http2.SettingID]uint32{
		http2.SettingMaxConcurrentStreams: 7,
		http2.SettingMaxHeaderListSize:    maxHeaderListBytes,
		http2.SettingInitialWindowSize:    streamWindow,
	} {
		if got, ok := settings.Value(id); !ok || got != want {
			t.Errorf("%v: %d (sent: %v), want %d", id, got, ok, want)
		}
	}
}
