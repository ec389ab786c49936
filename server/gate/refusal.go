package main

import (
	"fmt"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errorDomain is the ErrorInfo domain of every ziggurat refusal (server/ziggurat/wire/errors.py).
const errorDomain = "ziggurat"

// The reasons the gate refuses with itself; each travels with the status code the Python
// registry (server/ziggurat/wire/reasons.py) gives it, so a client cannot tell which half
// refused.
const (
	reasonShuttingDown        = "SERVER_SHUTTING_DOWN"
	reasonTooManyStreams      = "TOO_MANY_STREAMS"
	reasonTooManyConnections  = "TOO_MANY_CONNECTIONS"
	reasonFirstMessageTimeout = "FIRST_MESSAGE_TIMEOUT"
)

// refusal is the status a Python refusal has: code, message, and a google.rpc.Status whose
// details hold one ErrorInfo{reason, domain "ziggurat"} (sent as grpc-status-details-bin),
// which is what clients and the SDKs read the reason from.
func refusal(code codes.Code, reason, message string) error {
	st, err := status.New(code, message).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain})
	if err != nil { // only if ErrorInfo could not be marshalled: never
		panic(err)
	}
	return st.Err()
}

// shuttingDown is guard.shutting_down_error().
func shuttingDown() error {
	return refusal(codes.Unavailable, reasonShuttingDown,
		"the server is shutting down; reconnect and resume after it restarts")
}

func tooManyStreams(open, most int) error {
	return refusal(codes.ResourceExhausted, reasonTooManyStreams, fmt.Sprintf(
		"this address has %d calls open, the most the server allows (%d); close some first", open, most))
}

func tooManyConnections(inUse, most int) error {
	return refusal(codes.ResourceExhausted, reasonTooManyConnections, fmt.Sprintf(
		"this address has %d connections in use, the most the server allows (%d); share a channel", inUse, most))
}

func firstMessageLate(timeout time.Duration) error {
	return refusal(codes.DeadlineExceeded, reasonFirstMessageTimeout,
		"a stream must send its first message within "+pythonG(timeout.Seconds())+" s")
}

// pythonG formats like Python's "{:g}" (6 significant digits, no trailing zeros), which the
// Python guard uses for the same message: 10 -> "10", 0.5 -> "0.5".
func pythonG(x float64) string {
	return strconv.FormatFloat(x, 'g', 6, 64)
}
