package ziggurat

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// Domain is the ErrorInfo domain of the reasons ziggurat gives.
const Domain = "ziggurat"

// Reasons a bot commonly meets (docs/protocol.md, "Errors", lists them all).
const (
	ReasonIllegalMove     = "ILLEGAL_MOVE"
	ReasonMalformedMove   = "MALFORMED_MOVE"
	ReasonNotYourTurn     = "NOT_YOUR_TURN"
	ReasonStalePly        = "STALE_PLY"
	ReasonGameOver        = "GAME_OVER"
	ReasonMatchNotFound   = "MATCH_NOT_FOUND"
	ReasonMatchFull       = "MATCH_FULL"
	ReasonBadToken        = "BAD_TOKEN"
	ReasonMissingToken    = "MISSING_TOKEN"
	ReasonNotWaiting      = "NOT_WAITING"
	ReasonBotNotConnected = "BOT_NOT_CONNECTED"
	ReasonBotBusy         = "BOT_BUSY"
	// ReasonTooManyInvitations: the invited bot already has as many invitations waiting to
	// be played as the server allows (ziggurat serve --max-pending-invitations).
	ReasonTooManyInvitations = "TOO_MANY_INVITATIONS"
	// ReasonMatchElsewhere: another worker process owns the match; the Client follows it
	// by itself (routes.go), so callers of its methods never see it.
	ReasonMatchElsewhere = "MATCH_ELSEWHERE"
	// ReasonGaveUp is the client's own: the server stayed unreachable through every retry.
	ReasonGaveUp = "GAVE_UP"
)

// Error is a call the server refused: the gRPC status code, the machine-readable reason
// from the google.rpc.ErrorInfo in the status details (empty when there is none, e.g. a
// transport failure), and the message. Use errors.As to get it from any error this
// package returns.
type Error struct {
	Code    codes.Code
	Reason  string
	Message string
}

func (e *Error) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("%s %s: %s", e.Code, e.Reason, e.Message)
}

// FromError converts a gRPC status error into *Error (nil stays nil; an *Error and errors
// that are not gRPC statuses are returned as they are).
func FromError(err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return already
	}
	st, ok := status.FromError(err)
	if !ok {
		return err // not a gRPC status (the bot's own error, a RejectedError): kept as is
	}
	result := &Error{Code: st.Code(), Message: st.Message()}
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain {
			result.Reason = info.GetReason()
		}
	}
	return result
}

// ReasonOf returns the ziggurat reason of err ("" when it has none).
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// retryable tells whether a failed stream is worth reconnecting: the server or the network
// went away (or is restarting), as opposed to a refusal that would be repeated.
func retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false // not the server's nor the network's: the bot's own error
	}
	switch e.Code {
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded, codes.Internal, codes.Unknown, codes.Aborted:
		return true
	}
	return false
}

// Rejection is a move the server refused on the Play stream (nothing changed): the move,
// the machine-readable reason (as in ErrorInfo) and a message.
type Rejection struct {
	Move    string
	Reason  string
	Message string
	Ply     uint32 // the turn it was sent for
}

func rejectionFrom(m *pb.MoveRejected, ply uint32) Rejection {
	return Rejection{Move: m.GetMove(), Reason: m.GetReason(), Message: m.GetMessage(), Ply: ply}
}

// RejectedError is returned by Play when the user function kept choosing refused moves.
type RejectedError struct{ Rejections []Rejection }

func (e *RejectedError) Error() string {
	last := e.Rejections[len(e.Rejections)-1]
	return fmt.Sprintf("%d moves refused in a row; last %q: %s %s", len(e.Rejections), last.Move, last.Reason, last.Message)
}
