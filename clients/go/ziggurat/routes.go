package ziggurat

import (
	"strings"
	"sync"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// A server run as several worker processes (`ziggurat serve --workers N`, docs/scaling.md)
// names the process that owns a match in Match.server_address, and refuses a call that
// reached another process with MATCH_ELSEWHERE, the owner's address in the ErrorInfo
// metadata "address". The Client remembers the owner of each match (one connection per
// address) and sends that match's calls there, so callers never see the difference.

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

// routed runs a unary call on the process that serves matchID, following MATCH_ELSEWHERE.
func routed[T any](c *Client, matchID string, call func(pb.MatchServiceClient) (T, error)) (T, error) {
	for hop := 0; ; hop++ {
		response, err := call(c.stubFor(matchID))
		address := elsewhere(err)
		if address == "" || hop == maxRedirects {
			return response, FromError(err)
		}
		c.learnRoute(matchID, address)
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
