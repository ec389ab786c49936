package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
)

func TestAClientThatNeverReadsDoesNotHoldTheStopUp(t *testing.T) {
	target := startStaticUpstream(t, func(_ any, stream grpc.ServerStream) error {
		if err := stream.RecvMsg(new(frame)); err != nil {
			return err
		}
		chunk := strings.Repeat("e", 16<<10)
		for stream.SendMsg(bytesFrame(chunk)) == nil { // events until the call is cut
		}
		return nil
	})
	p := startProcess(t, secretEnv(), "--listen", "127.0.0.1:0", "--upstream", target, "--shutdown-timeout", "0.5")
	address := p.ready(t)
	stream := open(t, context.Background(), dialStatic(t, address), "/test.Flood/Watch")
	if err := stream.SendMsg(bytesFrame("watch")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the windows fill: the gate's send to the client blocks
	stopped := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t, 10*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	// --shutdown-timeout, then about stopFlushWait: the Python server kills a gate 2 s late.
	if took := time.Since(stopped); took > 2*time.Second {
		t.Fatalf("the gate took %v to exit, want at most 2 s (--shutdown-timeout 0.5, then the flush)", took)
	}
}
