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

/// An open connection to a server (cheap to clone: clones share one HTTP/2 connection).
#[derive(Debug, Clone)]
pub struct Client {
    channel: Channel,
    matches: MatchServiceClient<Channel>,
}

/// A `GameConfig` for `game` with `seats` seats and default options.
pub fn game_config(game: pb::Game, seats: u32) -> pb::GameConfig {
    pb::GameConfig {
        game: game as i32,
        seats,
        options: None,
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
        let tls = options.tls || options.ca_pem.is_some();
        let uri = if address.contains("://") {
            address.to_string()
        } else {
            format!("{}://{address}", if tls { "https" } else { "http" })
        };
        let bad =
            |e: tonic::transport::Error| Error::new(Code::InvalidArgument, None, format!("{address}: {e}"));
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
        let channel = endpoint.connect().await?;
        Ok(Client::from_channel(channel))
    }

    /// Wraps a channel made elsewhere.
    pub fn from_channel(channel: Channel) -> Client {
        Client {
            matches: MatchServiceClient::new(channel.clone()),
            channel,
        }
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
            r#match: created,
            creator_token: response.creator_token,
        })
    }

    /// Cancels a match that is still waiting for players, with the creator token from
    /// [`Client::create_match`]; returns it, now finished (aborted). A match that has
    /// started is refused with `NOT_WAITING`.
    pub async fn cancel_match(&self, match_id: &str, creator_token: &str) -> Result<pb::Match, Error> {
        let request = authorized(
            pb::CancelMatchRequest {
                match_id: match_id.to_string(),
            },
            Some(creator_token),
        );
        let response = self.matches.clone().cancel_match(request).await?.into_inner();
        response
            .r#match
            .ok_or_else(|| Error::new(Code::Internal, None, "CancelMatch returned no match"))
    }

    /// Takes a seat under `name`; `seat` (1-based) only for `SEAT_ASSIGNMENT_CHOSEN` matches, 0 otherwise.
    pub async fn join(&self, match_id: &str, name: &str, seat: u32) -> Result<MatchHandle, Error> {
        let request = pb::JoinMatchRequest {
            match_id: match_id.to_string(),
            player_name: name.to_string(),
            seat,
        };
        let response = self.matches.clone().join_match(request).await?.into_inner();
        Ok(MatchHandle {
            match_id: match_id.to_string(),
            seat: response.seat,
            token: response.token,
        })
    }

    /// The match as `handle`'s seat (or, with `None`, a spectator) sees it.
    pub async fn get_match(&self, match_id: &str, handle: Option<&MatchHandle>) -> Result<pb::Match, Error> {
        let request = authorized(
            pb::GetMatchRequest {
                match_id: match_id.to_string(),
            },
            token(handle),
        );
        let response = self.matches.clone().get_match(request).await?.into_inner();
        response
            .r#match
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
            matches.extend(page.matches);
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
        Ok(self
            .matches
            .clone()
            .submit_move(authorized(message, Some(&handle.token)))
            .await?
            .into_inner())
    }

    /// Resigns `handle`'s seat; returns the seq of the event that records it.
    pub async fn resign(&self, handle: &MatchHandle) -> Result<u64, Error> {
        let message = pb::ResignRequest {
            match_id: handle.match_id.clone(),
        };
        Ok(self
            .matches
            .clone()
            .resign(authorized(message, Some(&handle.token)))
            .await?
            .into_inner()
            .seq)
    }

    /// The verifiable record of a finished match (`NOT_FINISHED` before its end).
    pub async fn record(&self, match_id: &str) -> Result<pb::MatchRecord, Error> {
        let request = pb::GetMatchRecordRequest {
            match_id: match_id.to_string(),
        };
        let response = self.matches.clone().get_match_record(request).await?.into_inner();
        response
            .record
            .ok_or_else(|| Error::new(Code::Internal, None, "GetMatchRecord returned no record"))
    }

    /// Invites a connected remote bot into a match that waits for players ("challenge a
    /// bot"): it takes a seat (`seat` only for `SEAT_ASSIGNMENT_CHOSEN`, else 0) and gets it
    /// as an assignment. Returns the seat and the match after it sat down.
    pub async fn invite_bot(
        &self,
        match_id: &str,
        bot_name: &str,
        seat: u32,
    ) -> Result<(u32, pb::Match), Error> {
        let request = pb::InviteBotRequest {
            match_id: match_id.to_string(),
            bot_name: bot_name.to_string(),
            seat,
        };
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
    /// connection drops; [`Client::follow`] resumes by itself.
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
        Ok(self
            .matches
            .clone()
            .watch_match(authorized(message, token(handle)))
            .await?
            .into_inner())
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
            loop {
                let failure = match client.watch(&match_id, handle.as_ref(), last).await {
                    Ok(mut stream) => loop {
                        match stream.message().await {
                            Ok(Some(response)) => {
                                backoff.reset();
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
                if !failure.is_retryable() {
                    let _ = sender.send(Err(failure)).await;
                    return;
                }
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
