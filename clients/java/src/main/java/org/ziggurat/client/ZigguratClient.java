package org.ziggurat.client;

import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.AbstractStub;
import io.grpc.stub.MetadataUtils;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.ziggurat.v1.BotServiceGrpc;
import org.ziggurat.v1.CancelMatchRequest;
import org.ziggurat.v1.ConnectedBot;
import org.ziggurat.v1.CreateMatchRequest;
import org.ziggurat.v1.CreateMatchResponse;
import org.ziggurat.v1.Game;
import org.ziggurat.v1.GameConfig;
import org.ziggurat.v1.GameInfo;
import org.ziggurat.v1.GetMatchRecordRequest;
import org.ziggurat.v1.GetMatchRequest;
import org.ziggurat.v1.InviteBotRequest;
import org.ziggurat.v1.InviteBotResponse;
import org.ziggurat.v1.JoinMatchRequest;
import org.ziggurat.v1.JoinMatchResponse;
import org.ziggurat.v1.ListBotsRequest;
import org.ziggurat.v1.ListGamesRequest;
import org.ziggurat.v1.ListMatchesRequest;
import org.ziggurat.v1.ListMatchesResponse;
import org.ziggurat.v1.Match;
import org.ziggurat.v1.MatchEndedEvent;
import org.ziggurat.v1.MatchRecord;
import org.ziggurat.v1.MatchServiceGrpc;
import org.ziggurat.v1.MatchStatus;
import org.ziggurat.v1.ResignRequest;
import org.ziggurat.v1.SeatAssignment;
import org.ziggurat.v1.SubmitMoveRequest;
import org.ziggurat.v1.SubmitMoveResponse;
import org.ziggurat.v1.TimeControl;
import org.ziggurat.v1.WatchMatchRequest;
import org.ziggurat.v1.WatchMatchResponse;

/**
 * An open connection to a ziggurat server. Every method is one RPC of
 * {@code proto/ziggurat/v1/match_service.proto}; refusals are thrown as {@link
 * ZigguratException} with the server's machine-readable {@link Reason}. Thread-safe; close it
 * when done ({@code try (var client = ZigguratClient.connect("127.0.0.1:50051")) {…}}).
 *
 * <p>A server run as several worker processes ({@code ziggurat serve --workers N},
 * docs/scaling.md) names the worker that owns a match in {@code Match.server_address} and
 * refuses a call that reached another worker with {@code MATCH_ELSEWHERE}, the owner's address
 * in the ErrorInfo metadata {@code address}. The client remembers the owner of each match (one
 * channel per address, same credentials) and sends that match's calls (unary, {@code Play},
 * {@code WatchMatch}) there, so callers never see the difference. When that address stops
 * answering (its worker restarted on another port, or the whole server did) the client forgets
 * it and asks the address it connected to again, which serves the match or names its owner now:
 * a unary call is retried there at once, {@code Play} and {@link #follow} on their next
 * reconnection.
 */
public final class ZigguratClient implements AutoCloseable {
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  /** How many MATCH_ELSEWHERE answers one call follows. */
  static final int MAX_REDIRECTS = 2;

  private final String address;
  private final ChannelCredentials credentials;
  private final ManagedChannel channel;
  private final MatchServiceGrpc.MatchServiceBlockingStub blocking;
  private final ConcurrentHashMap<String, String> routes = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<String, ManagedChannel> channels = new ConcurrentHashMap<>();

  private ZigguratClient(String address, ChannelCredentials credentials) {
    this.address = address;
    this.credentials = credentials;
    this.channel = open(address, credentials);
    this.blocking = MatchServiceGrpc.newBlockingStub(channel);
  }

  /**
   * Connects to {@code address} ({@code HOST:PORT}) in plaintext. {@code unix:PATH} connects to
   * a Unix socket instead, as tournaments give their sandboxed programs in {@code ZIGGURAT_SERVER}.
   */
  public static ZigguratClient connect(String address) {
    return connect(address, InsecureChannelCredentials.create());
  }

  /**
   * Connects with TLS, trusting the system's root certificates, or only {@code caPem} (PEM
   * bytes, e.g. a LAN server's self-signed certificate) when it is not null.
   */
  public static ZigguratClient connectTls(String address, byte[] caPem) {
    TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder();
    if (caPem != null) {
      try {
        tls.trustManager(new ByteArrayInputStream(caPem));
      } catch (IOException error) {
        throw new IllegalArgumentException("cannot read the CA certificate: " + error.getMessage(), error);
      }
    }
    return connect(address, tls.build());
  }

  /** Connects with any channel credentials. The channel connects on first use and reconnects by itself. */
  public static ZigguratClient connect(String address, ChannelCredentials credentials) {
    return new ZigguratClient(address, credentials);
  }

  private static ManagedChannel open(String address, ChannelCredentials credentials) {
    return Grpc.newChannelBuilder(address, credentials)
        .keepAliveTime(20, TimeUnit.SECONDS)
        .keepAliveTimeout(10, TimeUnit.SECONDS)
        .keepAliveWithoutCalls(true)
        .build();
  }

  /**
   * The address this client sends {@code matchId}'s calls to: the owner a {@code Match} or a
   * {@code MATCH_ELSEWHERE} named, or null for the address it connected to.
   */
  public String route(String matchId) {
    return routes.get(matchId);
  }

  /** The channel to the worker serving {@code matchId} (the connected one unless a route is known). */
  ManagedChannel channelFor(String matchId) {
    String owner = matchId == null ? null : routes.get(matchId);
    if (owner == null || owner.equals(address)) {
      return channel;
    }
    return channels.computeIfAbsent(owner, target -> open(target, credentials));
  }

  /** Records where {@code matchId} is served; {@code :PORT} means the host connected to. */
  void learnRoute(String matchId, String owner) {
    if (matchId == null || matchId.isEmpty() || owner == null || owner.isEmpty()) {
      return;
    }
    int colon = address.lastIndexOf(':');
    if (owner.startsWith(":") && colon >= 0) {
      owner = address.substring(0, colon) + owner;
    }
    routes.put(matchId, owner);
    ManagedChannel known = channels.get(owner);
    if (known != null) {
      // An owner named again may be back after a restart: try it now, not after gRPC's
      // reconnect backoff (up to 2 minutes), during which every call to it fails at once.
      known.resetConnectBackoff();
    }
  }

  /**
   * Forgets that {@code matchId} is served at {@code owner} when {@code error} says that
   * address, where the failed call went, did not answer ({@code UNAVAILABLE} or {@code
   * DEADLINE_EXCEEDED} with no reason from a server): the match's calls go to the connected
   * address again. A refusal from the owner (it answered) keeps the route. True when forgotten.
   */
  boolean forgetRoute(String matchId, String owner, ZigguratException error) {
    if (matchId == null || owner == null || owner.equals(address) || error.reasonText() != null) {
      return false;
    }
    if (error.code() != Status.Code.UNAVAILABLE && error.code() != Status.Code.DEADLINE_EXCEEDED) {
      return false;
    }
    return routes.remove(matchId, owner);
  }

  /** Learns the route {@code match} names and returns it unchanged. */
  Match note(Match match) {
    learnRoute(match.getMatchId(), match.getServerAddress());
    return match;
  }

  /**
   * Runs a unary call on the worker serving {@code matchId}, following {@code MATCH_ELSEWHERE}
   * up to {@link #MAX_REDIRECTS} times, and on the connected address again when the owner's
   * address does not answer.
   */
  private <T> T routed(String matchId, Function<MatchServiceGrpc.MatchServiceBlockingStub, T> rpc) {
    ZigguratException silent = null; // the owner's address did not answer
    for (int hop = 0; ; hop++) {
      String route = route(matchId);
      try {
        return rpc.apply(MatchServiceGrpc.newBlockingStub(channelFor(matchId)));
      } catch (StatusRuntimeException error) {
        ZigguratException refused = ZigguratException.from(error);
        if (forgetRoute(matchId, route, refused)) {
          // Retried: the owner did not answer, so the call did not run there, or ran and was
          // lost with the process (as after any connection loss). DEADLINE_EXCEEDED: the
          // caller's time is spent.
          silent = refused;
          if (refused.code() == Status.Code.UNAVAILABLE && hop < MAX_REDIRECTS) {
            continue;
          }
          throw refused;
        }
        if (refused.ownerAddress() == null) {
          throw refused;
        }
        learnRoute(matchId, refused.ownerAddress());
        if (hop == MAX_REDIRECTS) {
          // Sent back to an owner that did not answer: that is the failure, a retryable one.
          throw silent != null ? silent : refused;
        }
      }
    }
  }

  /**
   * Every game the server hosts ({@code MatchService.ListGames}), in the order a lobby should
   * offer them: name, title, seat counts, rule options and whether anything is hidden. A bot
   * written before a game existed can still create and play it from this.
   */
  public List<GameInfo> listGames() {
    return call(() -> blocking.listGames(ListGamesRequest.getDefaultInstance())).getGamesList();
  }

  /**
   * The configuration of the game the server lists under {@code name} ({@code "pylos"}, {@code
   * "kabaleo"}, {@code "phantom-ttt"}, or one added since), resolved through {@link #listGames},
   * so it needs no per-game code. {@code seats} 0 takes the game's fewest seats; {@code options}
   * are its rule options by name, as {@code GameInfo.options} spells them ({@code
   * GameConfig.rule_options}), judged by the server when the match is created ({@code
   * INVALID_CONFIG}).
   *
   * @throws UnknownGameException for a name the server does not list (its message names those
   *     it does)
   */
  public GameConfig gameConfig(String name, int seats, Map<String, String> options) {
    List<GameInfo> games = listGames();
    for (GameInfo game : games) {
      if (game.getName().equals(name)) {
        return GameConfig.newBuilder()
            .setGame(game.getGame())
            .setSeats(seats == 0 ? game.getMinSeats() : seats)
            .putAllRuleOptions(options)
            .build();
      }
    }
    throw new UnknownGameException(name, games.stream().map(GameInfo::getName).toList());
  }

  /** A {@code GameConfig} for {@code game} with {@code seats} seats and default options. */
  public static GameConfig gameConfig(Game game, int seats) {
    return GameConfig.newBuilder().setGame(game).setSeats(seats).build();
  }

  /** A two-seat Pylos configuration. */
  public static GameConfig pylos() {
    return gameConfig(Game.GAME_PYLOS, 2);
  }

  /** A Kabaleo configuration for 2 to 4 seats. */
  public static GameConfig kabaleo(int seats) {
    return gameConfig(Game.GAME_KABALEO, seats);
  }

  /** The underlying channel (for the generated stubs of calls this class does not wrap). */
  public ManagedChannel channel() {
    return channel;
  }

  static <S extends AbstractStub<S>> S as(S stub, MatchHandle handle) {
    return handle == null ? stub : withToken(stub, handle.token());
  }

  static <S extends AbstractStub<S>> S withToken(S stub, String token) {
    Metadata headers = new Metadata();
    headers.put(AUTHORIZATION, "Bearer " + token);
    return stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
  }

  MatchServiceGrpc.MatchServiceStub asyncStub(String matchId) {
    return MatchServiceGrpc.newStub(channelFor(matchId));
  }

  BotServiceGrpc.BotServiceBlockingStub botStub() {
    return BotServiceGrpc.newBlockingStub(channel);
  }

  private static <T> T call(java.util.function.Supplier<T> rpc) {
    try {
      return rpc.get();
    } catch (StatusRuntimeException error) {
      throw ZigguratException.from(error);
    }
  }

  /** Creates an untimed match with seats drawn by lot. */
  public CreatedMatch createMatch(GameConfig config) {
    return createMatch(config, TimeControl.getDefaultInstance(), SeatAssignment.SEAT_ASSIGNMENT_LOT, null);
  }

  /**
   * Creates a match with open seats. {@code createToken} is for a server started with {@code
   * --create-token-file} (its create token, or the operator token); null otherwise.
   */
  public CreatedMatch createMatch(
      GameConfig config, TimeControl timeControl, SeatAssignment seating, String createToken) {
    CreateMatchRequest request =
        CreateMatchRequest.newBuilder()
            .setConfig(config)
            .setTimeControl(timeControl)
            .setSeatAssignment(seating)
            .build();
    MatchServiceGrpc.MatchServiceBlockingStub stub = createToken == null ? blocking : withToken(blocking, createToken);
    CreateMatchResponse response = call(() -> stub.createMatch(request));
    return new CreatedMatch(note(response.getMatch()), response.getCreatorToken());
  }

  /**
   * Cancels a match that is still waiting for players, with the creator token of {@link
   * #createMatch}; returns it, now finished (aborted). A match that has started is refused
   * with {@code NOT_WAITING}.
   */
  public Match cancelMatch(String matchId, String creatorToken) {
    CancelMatchRequest request = CancelMatchRequest.newBuilder().setMatchId(matchId).build();
    return note(routed(matchId, stub -> withToken(stub, creatorToken).cancelMatch(request).getMatch()));
  }

  /** Takes a seat under {@code name} (seats drawn by lot, or the lowest free one). */
  public MatchHandle join(String matchId, String name) {
    return join(matchId, name, 0);
  }

  /** Takes a seat; {@code seat} (1-based) only for {@code SEAT_ASSIGNMENT_CHOSEN} matches, 0 otherwise. */
  public MatchHandle join(String matchId, String name, int seat) {
    JoinMatchRequest request =
        JoinMatchRequest.newBuilder().setMatchId(matchId).setPlayerName(name).setSeat(seat).build();
    JoinMatchResponse response = routed(matchId, stub -> stub.joinMatch(request));
    return new MatchHandle(matchId, response.getSeat(), response.getToken());
  }

  /** The match as {@code handle}'s seat (or, with null, a spectator) sees it. */
  public Match getMatch(String matchId, MatchHandle handle) {
    GetMatchRequest request = GetMatchRequest.newBuilder().setMatchId(matchId).build();
    return note(routed(matchId, stub -> as(stub, handle).getMatch(request).getMatch()));
  }

  /** Every match, newest first, fetching page after page ({@code *_UNSPECIFIED} = no filter). */
  public List<Match> listMatches(MatchStatus status, Game game) {
    List<Match> matches = new ArrayList<>();
    String pageToken = "";
    do {
      ListMatchesRequest request =
          ListMatchesRequest.newBuilder().setStatus(status).setGame(game).setPageToken(pageToken).build();
      ListMatchesResponse page = call(() -> blocking.listMatches(request));
      page.getMatchesList().forEach(this::note);
      matches.addAll(page.getMatchesList());
      pageToken = page.getNextPageToken();
    } while (!pageToken.isEmpty());
    return matches;
  }

  /**
   * Plays {@code move} for the seat. {@code ply} (from the turn; null = no guard) keeps it from
   * being played on a later turn: a mismatch is refused with {@code STALE_PLY}.
   */
  public SubmitMoveResponse submitMove(MatchHandle handle, String move, Integer ply) {
    SubmitMoveRequest.Builder request =
        SubmitMoveRequest.newBuilder().setMatchId(handle.matchId()).setMove(move);
    if (ply != null) {
      request.setPly(ply);
    }
    return routed(handle.matchId(), stub -> as(stub, handle).submitMove(request.build()));
  }

  /** Resigns the seat; returns the seq of the event that records it. */
  public long resign(MatchHandle handle) {
    ResignRequest request = ResignRequest.newBuilder().setMatchId(handle.matchId()).build();
    return routed(handle.matchId(), stub -> as(stub, handle).resign(request).getSeq());
  }

  /** The verifiable record of a finished match ({@code NOT_FINISHED} before its end). */
  public MatchRecord record(String matchId) {
    GetMatchRecordRequest request = GetMatchRecordRequest.newBuilder().setMatchId(matchId).build();
    return routed(matchId, stub -> stub.getMatchRecord(request).getRecord());
  }

  /**
   * Invites a connected remote bot into a match that waits for players ("challenge a bot"): it
   * takes a seat ({@code seat} only for {@code SEAT_ASSIGNMENT_CHOSEN}, else 0) and gets it as
   * an assignment. Returns the seat and the match after it sat down. Only the match's creator
   * may invite: {@code creatorToken} is {@link CreatedMatch#creatorToken()} ({@code
   * MISSING_TOKEN} when null or empty, {@code BAD_TOKEN} for another); a bot with as many
   * invitations waiting to be played as the server allows is refused with {@code
   * TOO_MANY_INVITATIONS}.
   */
  public InviteBotResponse inviteBot(String matchId, String creatorToken, String botName, int seat) {
    InviteBotRequest request =
        InviteBotRequest.newBuilder().setMatchId(matchId).setBotName(botName).setSeat(seat).build();
    BotServiceGrpc.BotServiceBlockingStub stub =
        creatorToken == null || creatorToken.isEmpty() ? botStub() : withToken(botStub(), creatorToken);
    return call(() -> stub.inviteBot(request));
  }

  /** The remote bots connected now, with what they accept. */
  public List<ConnectedBot> listBots() {
    return call(() -> botStub().listBots(ListBotsRequest.getDefaultInstance()).getBotsList());
  }

  /**
   * One {@code WatchMatch} stream: the events after {@code afterSeq} as the seat (or a
   * spectator, with null) sees them, batched as the server recorded them. It ends when the match
   * ends; a dropped connection throws. {@link #follow} resumes by itself. A {@code
   * MATCH_ELSEWHERE} answer before the first response is followed to the owner.
   */
  public Iterator<WatchMatchResponse> watch(String matchId, MatchHandle handle, long afterSeq) {
    WatchMatchRequest request =
        WatchMatchRequest.newBuilder().setMatchId(matchId).setAfterSeq(afterSeq).build();
    return new Iterator<>() {
      private String route;
      private Iterator<WatchMatchResponse> responses = open();
      private boolean received;
      private int hops;

      private Iterator<WatchMatchResponse> open() {
        route = route(matchId);
        return call(() -> as(MatchServiceGrpc.newBlockingStub(channelFor(matchId)), handle).watchMatch(request));
      }

      @Override
      public boolean hasNext() {
        while (true) {
          try {
            boolean more = responses.hasNext();
            received |= more;
            return more;
          } catch (StatusRuntimeException error) {
            ZigguratException refused = ZigguratException.from(error);
            boolean silent = forgetRoute(matchId, route, refused); // the owner's address did not answer
            if (received || (!silent && refused.ownerAddress() == null) || hops++ == MAX_REDIRECTS) {
              throw refused;
            }
            if (!silent) {
              learnRoute(matchId, refused.ownerAddress());
            }
            responses = open();
          }
        }
      }

      @Override
      public WatchMatchResponse next() {
        return call(responses::next);
      }
    };
  }

  /**
   * Every event after {@code afterSeq}, each exactly once and in order, until the match ends,
   * across dropped connections and server restarts (reconnecting with {@code backoff}, resuming
   * after the last event delivered). Close it to stop early.
   */
  public EventStream follow(String matchId, MatchHandle handle, long afterSeq, Backoff backoff) {
    return new EventStream(this, matchId, handle, afterSeq, backoff);
  }

  /** Plays the seat with {@code bot} until the match ends (see {@link SeatRunner}). */
  public MatchEndedEvent play(MatchHandle handle, Bot bot) throws InterruptedException {
    return new SeatRunner(this, handle, bot).run();
  }

  @Override
  public void close() {
    List<ManagedChannel> all = new ArrayList<>(channels.values());
    all.add(channel);
    all.forEach(ManagedChannel::shutdownNow);
    try {
      for (ManagedChannel each : all) {
        each.awaitTermination(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
