use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Streaming};

use crate::backoff::Backoff;
use crate::error::{Error, Reason};
use crate::pb;
use crate::pb::bot_service_client::BotServiceClient;
use crate::pb::match_service_client::MatchServiceClient;

/// How to reach the server.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Speak TLS, trusting the system's root certificates (or `ca_pem`).
    pub tls: bool,
    /// PEM certificate(s) to trust instead of the system's, e.g. a LAN server's
    /// self-signed certificate. Implies TLS.
    pub ca_pem: Option<Vec<u8>>,
    /// The name to check the server's certificate against (default: the host of the address).
    pub domain: Option<String>,
}

/// The optional parts of [`Client::create_match`].
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    /// Clocks; `None` = untimed.
    pub time_control: Option<pb::TimeControl>,
    /// How joiners get seats (default: by lot).
    pub seat_assignment: pb::SeatAssignment,
    /// For a server started with `--create-token-file`: its create token (or the operator token).
    pub create_token: Option<String>,
}

/// A match just created, and the secret that cancels it while it waits for players.
#[derive(Debug, Clone)]
pub struct CreatedMatch {
    /// The match as a spectator sees it.
    pub r#match: pb::Match,
    /// Secret: lets its holder cancel the match while it is waiting.
    pub creator_token: String,
}

impl CreatedMatch {
    pub fn match_id(&self) -> &str {
        &self.r#match.match_id
    }
}

/// A joined seat: the match, the 1-based seat and its secret token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchHandle {
    pub match_id: String,
    pub seat: u32,
    pub token: String,
}

/// How many `MATCH_ELSEWHERE` answers one call follows.
pub(crate) const MAX_REDIRECTS: usize = 2;

/// An open connection to a server (cheap to clone: clones share one HTTP/2 connection and
/// what they learnt about where matches are served).
///
/// A server run as several worker processes (`ziggurat serve --workers N`, docs/scaling.md)
/// names the worker that owns a match in `Match.server_address` and refuses a call that
/// reached another worker with `MATCH_ELSEWHERE`, the owner's address in the ErrorInfo
/// metadata `address`. The client remembers the owner of each match (one channel per address,
/// same TLS options) and sends that match's calls (unary, `Play`, `WatchMatch`) there, so
/// callers never see the difference. When that address stops answering (its worker restarted
/// on another port, or the whole server did) the client forgets it and asks the address it
/// connected to again, which serves the match or names its owner now: a unary call is retried
/// there at once, `Play` and [`Client::follow`] on their next reconnection.
#[derive(Debug, Clone)]
pub struct Client {
    channel: Channel,
    matches: MatchServiceClient<Channel>,
    address: String,
    options: ConnectOptions,
    routes: Arc<Mutex<Routes>>,
}

/// Match id → owner address, and owner address → its channel.
#[derive(Debug, Default)]
struct Routes {
    by_match: HashMap<String, String>,
    channels: HashMap<String, Channel>,
}

/// A `GameConfig` for `game` with `seats` seats and default options ([`Client::game_config`]
/// makes one for any game the server lists, by its name).
pub fn game_config(game: pb::Game, seats: u32) -> pb::GameConfig {
    pb::GameConfig {
        game: game as i32,
        seats,
        ..Default::default()
    }
}

/// A two-seat Pylos configuration.
pub fn pylos() -> pb::GameConfig {
    game_config(pb::Game::Pylos, 2)
}

/// A Kabaleo configuration for 2 to 4 seats.
pub fn kabaleo(seats: u32) -> pb::GameConfig {
    game_config(pb::Game::Kabaleo, seats)
}

pub(crate) fn authorized<T>(message: T, token: Option<&str>) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(token) = token
        && let Ok(value) = MetadataValue::try_from(format!("Bearer {token}"))
    {
        request.metadata_mut().insert("authorization", value);
    }
    request
}

impl Client {
    /// Connects to `address` (`HOST:PORT`) in plaintext.
    pub async fn connect(address: &str) -> Result<Client, Error> {
        Client::connect_with(address, ConnectOptions::default()).await
    }

    /// Connects to `address` (`HOST:PORT`) with TLS or other options.
    ///
    /// The first connection is made now (so a wrong address fails here); after that the
    /// channel reconnects by itself whenever a call needs it.
    ///
    /// `unix:PATH` (or `unix:///PATH`) connects to a Unix socket instead, as tournaments give
    /// their sandboxed programs in `ZIGGURAT_SERVER`.
    pub async fn connect_with(address: &str, options: ConnectOptions) -> Result<Client, Error> {
        if let Some(path) = address.strip_prefix("unix:") {
            let path = std::path::PathBuf::from(path.strip_prefix("//").unwrap_or(path));
            let connector = tower::service_fn(move |_: tonic::transport::Uri| {
                let path = path.clone();
                async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(path).await?)) }
            });
            let channel = Endpoint::from_static("http://localhost")
                .connect_with_connector(connector)
                .await?;
            return Ok(Client::from_channel(channel));
        }
        let channel = endpoint(address, &options)?.connect().await?;
        let mut client = Client::from_channel(channel);
        client.address = address.to_string();
        client.options = options;
        Ok(client)
    }

    /// Wraps a channel made elsewhere (it does not follow `MATCH_ELSEWHERE`: it does not know
    /// the address it reaches).
    pub fn from_channel(channel: Channel) -> Client {
        Client {
            matches: MatchServiceClient::new(channel.clone()),
            channel,
            address: String::new(),
            options: ConnectOptions::default(),
            routes: Arc::default(),
        }
    }

    /// The address this client sends `match_id`'s calls to: the owner a `Match` or a
    /// `MATCH_ELSEWHERE` named, or `None` for the address it connected to.
    pub fn route(&self, match_id: &str) -> Option<String> {
        self.routes
            .lock()
            .expect("routes")
            .by_match
            .get(match_id)
            .cloned()
    }

    /// The `MatchService` of the worker serving `match_id` (the connected one unless a route
    /// is known).
    pub(crate) fn service_for(&self, match_id: &str) -> MatchServiceClient<Channel> {
        let mut routes = self.routes.lock().expect("routes");
        let Some(owner) = routes.by_match.get(match_id).cloned() else {
            return self.matches.clone();
        };
        if owner == self.address {
            return self.matches.clone();
        }
        if let Some(channel) = routes.channels.get(&owner) {
            return MatchServiceClient::new(channel.clone());
        }
        match endpoint(&owner, &self.options) {
            Ok(endpoint) => {
                let channel = endpoint.connect_lazy();
                routes.channels.insert(owner, channel.clone());
                MatchServiceClient::new(channel)
            }
            // An address we cannot use: the call goes where it can and fails clearly.
            Err(_) => self.matches.clone(),
        }
    }

    /// Sends `match_id`'s calls to `owner` from now on, as a `Match.server_address` or a
    /// `MATCH_ELSEWHERE` answer does (the client learns those by itself); `:PORT` means the
    /// host connected to. For code that learns a match's owner some other way.
    pub fn learn_route(&self, match_id: &str, owner: &str) {
        if match_id.is_empty() || owner.is_empty() || self.address.is_empty() {
            return;
        }
        let owner = match (owner.strip_prefix(':'), self.address.rfind(':')) {
            (Some(_), Some(colon)) => format!("{}{owner}", &self.address[..colon]),
            _ => owner.to_string(),
        };
        let mut routes = self.routes.lock().expect("routes");
        routes.by_match.insert(match_id.to_string(), owner);
    }

    /// Forgets that `match_id` is served at `owner` when `error` says that address, where the
    /// failed call went, did not answer (`Unavailable` or `DeadlineExceeded` with no reason from
    /// a server): the match's calls go to the connected address again. A refusal from the owner
    /// (it answered) keeps the route. True when forgotten.
    pub(crate) fn forget_route(&self, match_id: &str, owner: Option<&str>, error: &Error) -> bool {
        let Some(owner) = owner else { return false };
        if owner == self.address
            || error.reason.is_some()
            || !matches!(error.code, Code::Unavailable | Code::DeadlineExceeded)
        {
            return false;
        }
        let mut routes = self.routes.lock().expect("routes");
        if routes.by_match.get(match_id).map(String::as_str) != Some(owner) {
            return false;
        }
        routes.by_match.remove(match_id);
        true
    }

    /// Learns the route `m` names and returns it unchanged.
    fn note(&self, m: pb::Match) -> pb::Match {
        self.learn_route(&m.match_id, &m.server_address);
        m
    }

    /// Runs a unary call on the worker serving `match_id`, following `MATCH_ELSEWHERE` up to
    /// [`MAX_REDIRECTS`] times, and on the connected address again when the owner's address
    /// does not answer.
    async fn routed<T, F, Fut>(&self, match_id: &str, mut call: F) -> Result<T, Error>
    where
        F: FnMut(MatchServiceClient<Channel>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let mut silent: Option<Error> = None; // the owner's address did not answer
        for hop in 0..=MAX_REDIRECTS {
            let route = self.route(match_id);
            let error = match call(self.service_for(match_id)).await {
                Ok(response) => return Ok(response.into_inner()),
                Err(status) => Error::from(status),
            };
            if self.forget_route(match_id, route.as_deref(), &error) {
                // Retried: the owner did not answer, so the call did not run there, or ran and
                // was lost with the process (as after any connection loss). DeadlineExceeded:
                // the caller's time is spent.
                if error.code == Code::Unavailable && hop < MAX_REDIRECTS {
                    silent = Some(error);
                    continue;
                }
                return Err(error);
            }
            let Some(owner) = error.owner_address.clone() else {
                return Err(error);
            };
            self.learn_route(match_id, &owner);
            if hop == MAX_REDIRECTS {
                // Sent back to an owner that did not answer: that is the failure, a retryable one.
                return Err(silent.unwrap_or(error));
            }
        }
        unreachable!("the last hop returns")
    }

    /// The underlying channel (for the generated clients, e.g. `BotServiceClient::new`).
    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }

    /// The generated `MatchService` client, for calls this crate does not wrap.
    pub fn match_service(&self) -> MatchServiceClient<Channel> {
        self.matches.clone()
    }

    pub(crate) fn bot_service(&self) -> BotServiceClient<Channel> {
        BotServiceClient::new(self.channel.clone())
    }

    /// Every game the server hosts (`MatchService.ListGames`), in the order a lobby should
    /// offer them: name, title, seat counts, rule options and whether anything is hidden. A
    /// bot written before a game existed can still create and play it from this.
    pub async fn list_games(&self) -> Result<Vec<pb::GameInfo>, Error> {
        let response = self.matches.clone().list_games(pb::ListGamesRequest {}).await?;
        Ok(response.into_inner().games)
    }

    /// The configuration of the game the server lists under `name` (`"pylos"`, `"kabaleo"`,
    /// `"phantom-ttt"`, or one added since), resolved through [`Client::list_games`], so it
    /// needs no per-game code. `seats` 0 takes the game's fewest seats; `options` are its rule
    /// options by name, as `GameInfo.options` spells them (`GameConfig.rule_options`), judged by
    /// the server when the match is created (`INVALID_CONFIG`). A name the server does not list
    /// is refused here with [`Reason::UnknownGame`], the message naming every game it does.
    pub async fn game_config(
        &self,
        name: &str,
        seats: u32,
        options: &[(&str, &str)],
    ) -> Result<pb::GameConfig, Error> {
        let games = self.list_games().await?;
        let Some(game) = games.iter().find(|game| game.name == name) else {
            let known: Vec<&str> = games.iter().map(|game| game.name.as_str()).collect();
            let message = format!("unknown game {name:?}: this server hosts {}", known.join(", "));
            return Err(Error::new(
                Code::InvalidArgument,
                Some(Reason::UnknownGame),
                message,
            ));
        };
        Ok(pb::GameConfig {
            game: game.game,
            seats: if seats == 0 { game.min_seats } else { seats },
            rule_options: options
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        })
    }

    /// Creates a match with open seats (untimed, seats by lot, unless `options` say
    /// otherwise). The result holds the match as a spectator sees it and the secret
    /// creator token that [`Client::cancel_match`] needs.
    pub async fn create_match(
        &self,
        config: pb::GameConfig,
        options: CreateOptions,
    ) -> Result<CreatedMatch, Error> {
        let message = pb::CreateMatchRequest {
            config: Some(config),
            time_control: options.time_control,
            seat_assignment: options.seat_assignment as i32,
        };
        let request = authorized(message, options.create_token.as_deref());
        let response = self.matches.clone().create_match(request).await?.into_inner();
        let created = response
            .r#match
            .ok_or_else(|| Error::new(Code::Internal, None, "CreateMatch returned no match"))?;
        Ok(CreatedMatch {
            r#match: self.note(created),
            creator_token: response.creator_token,
        })
    }

    /// Cancels a match that is still waiting for players, with the creator token from
    /// [`Client::create_match`]; returns it, now finished (aborted). A match that has
    /// started is refused with `NOT_WAITING`.
    pub async fn cancel_match(&self, match_id: &str, creator_token: &str) -> Result<pb::Match, Error> {
        let message = pb::CancelMatchRequest {
            match_id: match_id.to_string(),
        };
        let response = self
            .routed(match_id, |mut service| {
                let request = authorized(message.clone(), Some(creator_token));
                async move { service.cancel_match(request).await }
            })
            .await?;
        response
            .r#match
            .map(|m| self.note(m))
            .ok_or_else(|| Error::new(Code::Internal, None, "CancelMatch returned no match"))
    }

    /// Takes a seat under `name`; `seat` (1-based) only for `SEAT_ASSIGNMENT_CHOSEN` matches, 0 otherwise.
    pub async fn join(&self, match_id: &str, name: &str, seat: u32) -> Result<MatchHandle, Error> {
        let request = pb::JoinMatchRequest {
            match_id: match_id.to_string(),
            player_name: name.to_string(),
            seat,
        };
        let response = self
            .routed(match_id, |mut service| {
                let request = request.clone();
                async move { service.join_match(request).await }
            })
            .await?;
        Ok(MatchHandle {
            match_id: match_id.to_string(),
            seat: response.seat,
            token: response.token,
        })
    }

    /// The match as `handle`'s seat (or, with `None`, a spectator) sees it.
    pub async fn get_match(&self, match_id: &str, handle: Option<&MatchHandle>) -> Result<pb::Match, Error> {
        let message = pb::GetMatchRequest {
            match_id: match_id.to_string(),
        };
        let response = self
            .routed(match_id, |mut service| {
                let request = authorized(message.clone(), token(handle));
                async move { service.get_match(request).await }
            })
            .await?;
        response
            .r#match
            .map(|m| self.note(m))
            .ok_or_else(|| Error::new(Code::Internal, None, "GetMatch returned no match"))
    }

    /// Every match, newest first, fetching page after page (`Unspecified` = no filter).
    pub async fn list_matches(
        &self,
        status: pb::MatchStatus,
        game: pb::Game,
    ) -> Result<Vec<pb::Match>, Error> {
        let mut matches = Vec::new();
        let mut page_token = String::new();
        loop {
            let request = pb::ListMatchesRequest {
                status: status as i32,
                game: game as i32,
                page_token: page_token.clone(),
                ..Default::default()
            };
            let page = self.matches.clone().list_matches(request).await?.into_inner();
            matches.extend(page.matches.into_iter().map(|m| self.note(m)));
            if page.next_page_token.is_empty() {
                return Ok(matches);
            }
            page_token = page.next_page_token;
        }
    }

    /// Plays `mv` for `handle`'s seat. `ply` (from the turn) guards against playing it on a
    /// later turn: a mismatch is refused with `STALE_PLY`.
    pub async fn submit_move(
        &self,
        handle: &MatchHandle,
        mv: &str,
        ply: Option<u32>,
    ) -> Result<pb::SubmitMoveResponse, Error> {
        let message = pb::SubmitMoveRequest {
            match_id: handle.match_id.clone(),
            r#move: mv.to_string(),
            ply,
        };
        self.routed(&handle.match_id, |mut service| {
            let request = authorized(message.clone(), Some(&handle.token));
            async move { service.submit_move(request).await }
        })
        .await
    }

    /// Resigns `handle`'s seat; returns the seq of the event that records it.
    pub async fn resign(&self, handle: &MatchHandle) -> Result<u64, Error> {
        let message = pb::ResignRequest {
            match_id: handle.match_id.clone(),
        };
        let response = self
            .routed(&handle.match_id, |mut service| {
                let request = authorized(message.clone(), Some(&handle.token));
                async move { service.resign(request).await }
            })
            .await?;
        Ok(response.seq)
    }

    /// The verifiable record of a finished match (`NOT_FINISHED` before its end).
    pub async fn record(&self, match_id: &str) -> Result<pb::MatchRecord, Error> {
        let request = pb::GetMatchRecordRequest {
            match_id: match_id.to_string(),
        };
        let response = self
            .routed(match_id, |mut service| {
                let request = request.clone();
                async move { service.get_match_record(request).await }
            })
            .await?;
        response
            .record
            .ok_or_else(|| Error::new(Code::Internal, None, "GetMatchRecord returned no record"))
    }

    /// Invites a connected remote bot into a match that waits for players ("challenge a
    /// bot"): it takes a seat (`seat` only for `SEAT_ASSIGNMENT_CHOSEN`, else 0) and gets it
    /// as an assignment. Returns the seat and the match after it sat down. Only the match's
    /// creator may invite: `creator_token` is the one `create_match` returned
    /// (`MISSING_TOKEN` when empty, `BAD_TOKEN` for another); a bot with as many invitations
    /// waiting to be played as the server allows is refused with `TOO_MANY_INVITATIONS`.
    pub async fn invite_bot(
        &self,
        match_id: &str,
        creator_token: &str,
        bot_name: &str,
        seat: u32,
    ) -> Result<(u32, pb::Match), Error> {
        let message = pb::InviteBotRequest {
            match_id: match_id.to_string(),
            bot_name: bot_name.to_string(),
            seat,
        };
        let token = (!creator_token.is_empty()).then_some(creator_token);
        let request = authorized(message, token);
        let response = self.bot_service().invite_bot(request).await?.into_inner();
        let invited = response
            .r#match
            .ok_or_else(|| Error::new(Code::Internal, None, "InviteBot returned no match"))?;
        Ok((response.seat, invited))
    }

    /// The remote bots connected now, with what they accept.
    pub async fn list_bots(&self) -> Result<Vec<pb::ConnectedBot>, Error> {
        Ok(self
            .bot_service()
            .list_bots(pb::ListBotsRequest {})
            .await?
            .into_inner()
            .bots)
    }

    /// One `WatchMatch` stream: the events after `after_seq` as the seat (or a spectator)
    /// sees them, batched as the server recorded them. It ends when the match ends or the
    /// connection drops; [`Client::follow`] resumes by itself. A `MATCH_ELSEWHERE` answer is
    /// followed to the owner.
    pub async fn watch(
        &self,
        match_id: &str,
        handle: Option<&MatchHandle>,
        after_seq: u64,
    ) -> Result<Streaming<pb::WatchMatchResponse>, Error> {
        let message = pb::WatchMatchRequest {
            match_id: match_id.to_string(),
            after_seq,
        };
        self.routed(match_id, |mut service| {
            let request = authorized(message.clone(), token(handle));
            async move { service.watch_match(request).await }
        })
        .await
    }

    /// Every event after `after_seq`, each exactly once and in order, until the match ends,
    /// across dropped connections and server restarts (reconnecting with `backoff` and
    /// resuming after the last event delivered). A refusal (e.g. `MATCH_NOT_FOUND`) or
    /// running out of attempts ends the stream with an `Err`.
    pub fn follow(
        &self,
        match_id: &str,
        handle: Option<MatchHandle>,
        after_seq: u64,
        backoff: Backoff,
    ) -> ReceiverStream<Result<pb::Event, Error>> {
        let (sender, receiver) = tokio::sync::mpsc::channel(64);
        let client = self.clone();
        let match_id = match_id.to_string();
        tokio::spawn(async move {
            let mut backoff = backoff;
            let mut last = after_seq;
            let mut redirects = 0;
            loop {
                let route = client.route(&match_id);
                let failure = match client.watch(&match_id, handle.as_ref(), last).await {
                    Ok(mut stream) => loop {
                        match stream.message().await {
                            Ok(Some(response)) => {
                                backoff.reset();
                                redirects = 0;
                                for event in response.events {
                                    if event.seq <= last {
                                        continue;
                                    }
                                    last = event.seq;
                                    let ended = matches!(event.kind, Some(pb::event::Kind::MatchEnded(_)));
                                    if sender.send(Ok(event)).await.is_err() || ended {
                                        return;
                                    }
                                }
                            }
                            Ok(None) => break Error::new(Code::Unavailable, None, "the stream ended early"),
                            Err(status) => break Error::from(status),
                        }
                    },
                    Err(error) => error,
                };
                if let Some(owner) = &failure.owner_address {
                    // Another worker owns the match (docs/scaling.md): reconnect there, at once
                    // a few times in a row, then with backoff (the owner may still be starting).
                    client.learn_route(&match_id, owner);
                    if redirects < MAX_REDIRECTS {
                        redirects += 1;
                        continue;
                    }
                    redirects = 0;
                } else if !failure.is_retryable() {
                    let _ = sender.send(Err(failure)).await;
                    return;
                }
                // The owner's address stopped answering: the next attempt asks the connected one.
                client.forget_route(&match_id, route.as_deref(), &failure);
                match backoff.next_delay() {
                    Some(delay) => tokio::time::sleep(delay).await,
                    None => {
                        let gave_up = Error::new(Code::Unavailable, Some(Reason::GaveUp), failure.message);
                        let _ = sender.send(Err(gave_up)).await;
                        return;
                    }
                }
            }
        });
        ReceiverStream::new(receiver)
    }
}

fn token(handle: Option<&MatchHandle>) -> Option<&str> {
    handle.map(|h| h.token.as_str())
}

/// The endpoint for `HOST:PORT` (or a URI) with the TLS options.
fn endpoint(address: &str, options: &ConnectOptions) -> Result<Endpoint, Error> {
    let tls = options.tls || options.ca_pem.is_some();
    let uri = if address.contains("://") {
        address.to_string()
    } else {
        format!("{}://{address}", if tls { "https" } else { "http" })
    };
    let bad = |e: tonic::transport::Error| Error::new(Code::InvalidArgument, None, format!("{address}: {e}"));
    let mut endpoint = Endpoint::from_shared(uri)
        .map_err(bad)?
        .connect_timeout(Duration::from_secs(10))
        .http2_keep_alive_interval(Duration::from_secs(20))
        .keep_alive_timeout(Duration::from_secs(10))
        .keep_alive_while_idle(true);
    if tls {
        let mut config = ClientTlsConfig::new();
        config = match &options.ca_pem {
            Some(pem) => config.ca_certificate(Certificate::from_pem(pem)),
            None => config.with_native_roots(),
        };
        if let Some(domain) = &options.domain {
            config = config.domain_name(domain.clone());
        }
        endpoint = endpoint.tls_config(config).map_err(bad)?;
    }
    Ok(endpoint)
}
