package main

import (
	"math"
	"testing"
	"time"
)

func TestOptionsTakeWhatZigguratServeTakes(t *testing.T) {
	env := func(string) string { return testSecret }
	c, err := parseConfig([]string{
		"--listen", "127.0.0.1:0", "--upstream", "unix:/x.sock",
		"--first-message-timeout", "0.25", "--max-connection-age", "inf", "--keepalive", "1e-05",
		"--max-streams-per-address", "99999999999", "--max-connections-per-address", "0",
	}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.firstMessageTimeout != 250*time.Millisecond || c.maxConnectionAge != longest ||
		c.keepalive != 10*time.Microsecond || c.maxStreamsPerAddress != math.MaxInt32 ||
		c.maxConnectionsPerAddress != 0 {
		t.Fatalf("parsed %+v", c)
	}
	d := defaultConfig()
	if d.maxMessageBytes != 65536 || d.maxStreamsPerConnection != 10000 || d.maxStreamsPerAddress != 5000 ||
		d.maxConnectionsPerAddress != 500 || d.firstMessageTimeout != 10*time.Second ||
		d.maxConnectionIdle != 60*time.Second || d.maxConnectionAge != time.Hour ||
		d.maxConnectionAgeGrace != 300*time.Second || d.keepalive != 30*time.Second ||
		d.keepaliveTimeout != 10*time.Second || d.handshakeTimeout != 20*time.Second ||
		d.shutdownTimeout != 10*time.Second || d.logLevel != levelInfo {
		t.Fatalf("defaults %+v, want those of ziggurat serve", d)
	}
	for _, bad := range [][]string{
		{"--keepalive", "nan"}, {"--keepalive", "-0.5"}, {"--max-message-bytes", "-1"}, {"--max-message-bytes", "1.5"},
	} {
		if _, err := parseConfig(append([]string{"--listen", ":0", "--upstream", "unix:/x"}, bad...), env); err == nil {
			t.Errorf("%v was accepted", bad)
		}
	}
}
