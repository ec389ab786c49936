package ziggurat

import (
	"errors"
	"strings"
	"sync"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// A server run as several worker processes (`ziggurat serve --workers N`, docs/scaling.md)
// names the process that owns a match in Match.server_address, and refuses a call that
// reached another process with MATCH_ELSEWHERE, the owner's address in the ErrorInfo
// metadata "address". The Client remembers the owner of each match (one connection per
// address) and sends that match's calls there, so callers never see the difference. When that
// address stops answering (its worker restarted on another port, or the whole server did),
// the Client forgets it and asks the dialled address again, which serves the match or names
// its owner now: a unary call is retried there at once, Play and Watch on their next
// reconnection.

// maxRedirects is how many MATCH_ELSEWHERE answers one call follows.
const maxRedirects = 2

// routes maps match ids to the address of the process that serves them, and addresses to
// their connections. Safe for concurrent use.
type routes struct {
	mu      sync.Mutex
	byMatch map[string]string
	conns   map[string]*grpc.ClientConn
	stubs   map[string]pb.MatchServiceClient
}

// stubFor returns the MatchService of the process serving matchID (the dialled one unless
// a route is known).
func (c *Client) stubFor(matchID string) pb.MatchServiceClient {
	c.routes.mu.Lock()
	defer c.routes.mu.Unlock()
	address, ok := c.routes.byMatch[matchID]
	if !ok || address == c.address {
		return c.Matches
	}
	if stub, ok := c.routes.stubs[address]; ok {
		return stub
	}
	conn, err := grpc.NewClient(address, c.dialOptions...)
	if err != nil {
		return c.Matches // an address we cannot dial: the call goes where it can and fails clearly
	}
	if c.routes.conns == nil {
		c.routes.conns = map[string]*grpc.ClientConn{}
		c.routes.stubs = map[string]pb.MatchServiceClient{}
	}
	c.routes.conns[address] = conn
	c.routes.stubs[address] = pb.NewMatchServiceClient(conn)
	return c.routes.stubs[address]
}

// Route returns the address the client sends matchID's calls to ("" = the one it dialled).
func (c *Client) Route(matchID string) string {
	c.routes.mu.Lock()
	defer c.routes.mu.Unlock()
	return c.routes.byMatch[matchID]
}

// learnRoute records where matchID is served: a Match.server_address or a MATCH_ELSEWHERE
// address; an empty host (":PORT") means the host of the dialled address.
func (c *Client) learnRoute(matchID, address string) {
	if matchID == "" || address == "" {
		return
	}
	if strings.HasPrefix(address, ":") {
		if i := strings.LastIndex(c.address, ":"); i >= 0 {
			address = c.address[:i] + address
		}
	}
	c.routes.mu.Lock()
	defer c.routes.mu.Unlock()
	if c.routes.byMatch == nil {
		c.routes.byMatch = map[string]string{}
	}
	c.routes.byMatch[matchID] = address
}

// note learns the route a Match names and returns it unchanged.
func (c *Client) note(match *pb.Match) *pb.Match {
	c.learnRoute(match.GetMatchId(), match.GetServerAddress())
	return match
}

// elsewhere returns the owner's address when err is a MATCH_ELSEWHERE refusal, else "".
func elsewhere(err error) string {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return ""
	}
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain && info.GetReason() == ReasonMatchElsewhere {
			return info.GetMetadata()["address"]
		}
	}
	return ""
}

// forgetRoute drops matchID's route when err says that address, where the failed call went,
// did not answer (Unavailable or DeadlineExceeded with no reason from a server); the match's
// calls then go to the dialled address. A refusal from the owner (it answered) keeps it.
func (c *Client) forgetRoute(matchID, address string, err error) bool {
	var e *Error
	if address == "" || address == c.address || !errors.As(FromError(err), &e) || e.Reason != "" {
		return false
	}
	if e.Code != codes.Unavailable && e.Code != codes.DeadlineExceeded {
		return false
	}
	c.routes.mu.Lock()
	defer c.routes.mu.Unlock()
	if c.routes.byMatch[matchID] != address {
		return false
	}
	delete(c.routes.byMatch, matchID)
	return true
}

// routed runs a unary call on the process that serves matchID, following MATCH_ELSEWHERE,
// and on the dialled address again when the owner's address does not answer.
func routed[T any](c *Client, matchID string, call func(pb.MatchServiceClient) (T, error)) (T, error) {
	var silent error // the owner's address did not answer
	for hop := 0; ; hop++ {
		route := c.Route(matchID)
		response, err := call(c.stubFor(matchID))
		if err == nil {
			return response, nil
		}
		if c.forgetRoute(matchID, route, err) {
			silent = FromError(err)
			// Retried: the owner did not answer, so the call did not run there, or ran and was
			// lost with the process (as after any connection loss). DeadlineExceeded: the
			// caller's time is spent.
			if status.Code(err) == codes.Unavailable && hop < maxRedirects {
				continue
			}
			return response, silent
		}
		address := elsewhere(err)
		if address == "" {
			return response, FromError(err)
		}
		c.learnRoute(matchID, address)
		if hop == maxRedirects {
			if silent != nil {
				return response, silent // sent back to an owner that did not answer: retryable
			}
			return response, FromError(err)
		}
	}
}

func (c *Client) closeRoutes() {
	c.routes.mu.Lock()
	defer c.routes.mu.Unlock()
	for _, conn := range c.routes.conns {
		_ = conn.Close()
	}
	c.routes.conns, c.routes.stubs = nil, nil
}
