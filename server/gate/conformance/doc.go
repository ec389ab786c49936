// Package conformance is the black-box test suite of ziggurat-gate's contract
// (server/gate/README.md), for any build of the gate in any language. Its tests start the
// binary named by ZIGGURAT_GATE_BINARY (an absolute path) as a subprocess, the way
// `ziggurat serve --gate` does, in front of a gRPC-Go upstream on a Unix socket that stands in
// for the Python server, and check only what crosses the wire, the exit code, standard output
// and standard error: never the gate's internals. Run it with
//
//	ZIGGURAT_GATE_BINARY=$PWD/.venv/bin/ziggurat-gate go test -C server/gate/conformance ./...
//
// A gate that keeps to the contract passes it; each failure names the behaviour it expected.
package conformance
