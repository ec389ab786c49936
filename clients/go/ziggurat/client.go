// Package ziggurat is the Go client of the ziggurat game server: connect, create and join
// matches, play a seat with one function (Play), spectate (Follow) and serve as a remote
// bot (RunRemoteBot). The generated gRPC API it wraps is in package zigguratv1.
package ziggurat

import (
	"context"
	"crypto/tls"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"

	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// Client is an open connection to a ziggurat server. It is safe for concurrent use.
type Client struct {
	conn    *grpc.ClientConn
	Matches pb.MatchServiceClient // the raw MatchService, for anything the helpers do not cover
	Bots    pb.BotServiceClient   // the raw BotService

	address     string
	dialOptions []grpc.DialOption
	routes      routes // where each match is served, with several worker processes (routes.go)
}

type dialConfig struct {
	tls    *tls.Config
	extras []grpc.DialOption
}

// DialOption configures Dial.
type DialOption func(*dialConfig)

// WithTLS speaks TLS. A nil config trusts the system's roots; pass a config with RootCAs
// set to trust a LAN server's self-signed certificate.
func WithTLS(config *tls.Config) DialOption {
	return func(c *dialConfig) {
		if config == nil {
			config = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		c.tls = config
	}
}

// WithGRPCOptions passes extra options to grpc.NewClient.
func WithGRPCOptions(options ...grpc.DialOption) DialOption {
	return func(c *dialConfig) { c.extras = append(c.extras, options...) }
}

// Dial connects to address (HOST:PORT), in plain text unless WithTLS is given. The
// connection is lazy: the first call establishes it, and gRPC re-establishes it when it drops.
func Dial(address string, options ...DialOption) (*Client, error) {
	config := dialConfig{}
	for _, option := range options {
		option(&config)
	}
	transport := insecure.NewCredentials()
	if config.tls != nil {
		transport = credentials.NewTLS(config.tls)
	}
	dialOptions := append([]grpc.DialOption{
		grpc.WithTransportCredentials(transport),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 20 * time.Second, Timeout: 10 * time.Second}),
		// An address that refused a connection is tried again within 2 s, not gRPC's up to
		// 120 s: until then every call to it fails at once, so a server (or a worker) back on
		// its port would go unused while the connection waits.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 200 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 20 * time.Second,
		}),
	}, config.extras...)
	conn, err := grpc.NewClient(address, dialOptions...)
	if err != nil {
		return nil, err
	}
	return &Client{
		conn:        conn,
		Matches:     pb.NewMatchServiceClient(conn),
		Bots:        pb.NewBotServiceClient(conn),
		address:     address,
		dialOptions: dialOptions,
	}, nil
}

// Close closes the connection (and those opened to the processes that own matches).
func (c *Client) Close() error {
	c.closeRoutes()
	return c.conn.Close()
}

// Handle is a joined seat: the match, the 1-based seat number and its secret token.
type Handle struct {
	MatchID string
	Seat    uint32
	Token   string
}

// Context returns ctx carrying the seat's credentials (authorization: Bearer <token>).
func (h Handle) Context(ctx context.Context) context.Context {
	if h.Token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+h.Token)
}

// CreateOptions are the optional parts of CreateMatch.
type CreateOptions struct {
	TimeControl    *pb.TimeControl
	SeatAssignment pb.SeatAssignment // default: seats by lot
}

// CreatedMatch is a new match as a spectator sees it, and the creator token that lets its
// holder cancel it while it waits for players (keep it secret).
type CreatedMatch struct {
	*pb.Match
	CreatorToken string
}

// CreateMatch creates a match with open seats.
func (c *Client) CreateMatch(ctx context.Context, config *pb.GameConfig, options *CreateOptions) (*CreatedMatch, error) {
	request := &pb.CreateMatchRequest{Config: config}
	if options != nil {
		request.TimeControl = options.TimeControl
		request.SeatAssignment = options.SeatAssignment
	}
	response, err := c.Matches.CreateMatch(ctx, request)
	if err != nil {
		return nil, FromError(err)
	}
	return &CreatedMatch{Match: c.note(response.GetMatch()), CreatorToken: response.GetCreatorToken()}, nil
}

// CancelMatch cancels a match still waiting for players, with the creator token
// CreateMatch returned; it ends as aborted. A started match is refused with NOT_WAITING.
func (c *Client) CancelMatch(ctx context.Context, matchID, creatorToken string) (*pb.Match, error) {
	handle := Handle{MatchID: matchID, Token: creatorToken}
	response, err := routed(c, matchID, func(m pb.MatchServiceClient) (*pb.CancelMatchResponse, error) {
		return m.CancelMatch(handle.Context(ctx), &pb.CancelMatchRequest{MatchId: matchID})
	})
	if err != nil {
		return nil, err
	}
	return c.note(response.GetMatch()), nil
}

// Pylos is the configuration of a standard two-player Pylos game.
func Pylos() *pb.GameConfig {
	return &pb.GameConfig{Game: pb.Game_GAME_PYLOS, Seats: 2}
}

// Kabaleo is the configuration of a Kabaleo game for seats players (2 to 4).
func Kabaleo(seats uint32) *pb.GameConfig {
	return &pb.GameConfig{Game: pb.Game_GAME_KABALEO, Seats: seats}
}

// Join takes a seat of a match under name; seat 0 takes the one the match gives (by lot,
// or the lowest free one), another number asks for that seat (SEAT_ASSIGNMENT_CHOSEN).
func (c *Client) Join(ctx context.Context, matchID, name string, seat uint32) (Handle, error) {
	response, err := routed(c, matchID, func(m pb.MatchServiceClient) (*pb.JoinMatchResponse, error) {
		return m.JoinMatch(ctx, &pb.JoinMatchRequest{MatchId: matchID, PlayerName: name, Seat: seat})
	})
	if err != nil {
		return Handle{}, err
	}
	c.note(response.GetMatch())
	return Handle{MatchID: matchID, Seat: response.GetSeat(), Token: response.GetToken()}, nil
}

// GetMatch returns the match as the seat of handle sees it (a zero Handle: as a spectator).
func (c *Client) GetMatch(ctx context.Context, matchID string, handle Handle) (*pb.Match, error) {
	response, err := routed(c, matchID, func(m pb.MatchServiceClient) (*pb.GetMatchResponse, error) {
		return m.GetMatch(handle.Context(ctx), &pb.GetMatchRequest{MatchId: matchID})
	})
	if err != nil {
		return nil, err
	}
	return c.note(response.GetMatch()), nil
}

// ListMatches lists matches, newest first (status UNSPECIFIED: all).
func (c *Client) ListMatches(ctx context.Context, status pb.MatchStatus) ([]*pb.Match, error) {
	response, err := c.Matches.ListMatches(ctx, &pb.ListMatchesRequest{Status: status})
	if err != nil {
		return nil, FromError(err)
	}
	for _, match := range response.GetMatches() {
		c.note(match)
	}
	return response.GetMatches(), nil
}

// SubmitMove plays move for the seat outside the Play stream. ply > 0 guards the move:
// it is refused (STALE_PLY) unless the turn is that ply; pass -1 for no guard.
func (c *Client) SubmitMove(ctx context.Context, handle Handle, move string, ply int64) (*pb.SubmitMoveResponse, error) {
	request := &pb.SubmitMoveRequest{MatchId: handle.MatchID, Move: move}
	if ply >= 0 {
		guard := uint32(ply)
		request.Ply = &guard
	}
	return routed(c, handle.MatchID, func(m pb.MatchServiceClient) (*pb.SubmitMoveResponse, error) {
		return m.SubmitMove(handle.Context(ctx), request)
	})
}

// Resign resigns the seat.
func (c *Client) Resign(ctx context.Context, handle Handle) error {
	_, err := routed(c, handle.MatchID, func(m pb.MatchServiceClient) (*pb.ResignResponse, error) {
		return m.Resign(handle.Context(ctx), &pb.ResignRequest{MatchId: handle.MatchID})
	})
	return err
}

// Record returns the verifiable record of a finished match.
func (c *Client) Record(ctx context.Context, matchID string) (*pb.MatchRecord, error) {
	response, err := routed(c, matchID, func(m pb.MatchServiceClient) (*pb.GetMatchRecordResponse, error) {
		return m.GetMatchRecord(ctx, &pb.GetMatchRecordRequest{MatchId: matchID})
	})
	if err != nil {
		return nil, err
	}
	return response.GetRecord(), nil
}
