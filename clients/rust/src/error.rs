use std::fmt;

use tonic::Code;
use tonic_types::StatusExt;

/// The machine-readable reason of a refusal (`google.rpc.ErrorInfo.reason`, domain
/// `ziggurat`, or `MoveRejected.reason` on the Play stream): the list of
/// `server/ziggurat/wire/reasons.py`, explained in docs/protocol.md, "Errors".
///
/// Reasons this version does not know arrive as [`Reason::Other`] with the server's text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    MalformedRequest,
    MalformedMove,
    InvalidConfig,
    InvalidPosition,
    BadName,
    BadSeat,
    SeatByLot,
    BadFilter,
    BadPageToken,
    IllegalMove,
    NotYourTurn,
    StalePly,
    TimeExpired,
    SeatForfeited,
    NotStarted,
    GameOver,
    MatchFull,
    SeatTaken,
    NotWaiting,
    CreationClosed,
    NotFinished,
    BotNotConnected,
    BotGame,
    BotBusy,
    MatchNotFound,
    MissingToken,
    AdminDisabled,
    BadToken,
    RateLimited,
    TooManyMatches,
    TooManyStreams,
    TooManyConnections,
    /// The invited bot already has as many invitations waiting to be played as the server allows.
    TooManyInvitations,
    BadSeq,
    StoreUnavailable,
    ServerError,
    FirstMessageTimeout,
    ServerShuttingDown,
    MatchDamaged,
    DatabaseDamaged,
    /// Refused by a worker that does not own the match; the client follows it by itself.
    MatchElsewhere,
    WorkerUnavailable,
    /// Not sent by the server: the client gave up reconnecting.
    GaveUp,
    /// Not sent by the server: [`Client::game_config`](crate::Client::game_config) was given a
    /// name the server's `ListGames` does not list (the message names those it does).
    UnknownGame,
    /// A reason this client version does not name.
    Other(String),
}

const NAMES: &[(&str, Reason)] = &[
    ("MALFORMED_REQUEST", Reason::MalformedRequest),
    ("MALFORMED_MOVE", Reason::MalformedMove),
    ("INVALID_CONFIG", Reason::InvalidConfig),
    ("INVALID_POSITION", Reason::InvalidPosition),
    ("BAD_NAME", Reason::BadName),
    ("BAD_SEAT", Reason::BadSeat),
    ("SEAT_BY_LOT", Reason::SeatByLot),
    ("BAD_FILTER", Reason::BadFilter),
    ("BAD_PAGE_TOKEN", Reason::BadPageToken),
    ("ILLEGAL_MOVE", Reason::IllegalMove),
    ("NOT_YOUR_TURN", Reason::NotYourTurn),
    ("STALE_PLY", Reason::StalePly),
    ("TIME_EXPIRED", Reason::TimeExpired),
    ("SEAT_FORFEITED", Reason::SeatForfeited),
    ("NOT_STARTED", Reason::NotStarted),
    ("GAME_OVER", Reason::GameOver),
    ("MATCH_FULL", Reason::MatchFull),
    ("SEAT_TAKEN", Reason::SeatTaken),
    ("NOT_WAITING", Reason::NotWaiting),
    ("CREATION_CLOSED", Reason::CreationClosed),
    ("NOT_FINISHED", Reason::NotFinished),
    ("BOT_NOT_CONNECTED", Reason::BotNotConnected),
    ("BOT_GAME", Reason::BotGame),
    ("BOT_BUSY", Reason::BotBusy),
    ("MATCH_NOT_FOUND", Reason::MatchNotFound),
    ("MISSING_TOKEN", Reason::MissingToken),
    ("ADMIN_DISABLED", Reason::AdminDisabled),
    ("BAD_TOKEN", Reason::BadToken),
    ("RATE_LIMITED", Reason::RateLimited),
    ("TOO_MANY_MATCHES", Reason::TooManyMatches),
    ("TOO_MANY_STREAMS", Reason::TooManyStreams),
    ("TOO_MANY_CONNECTIONS", Reason::TooManyConnections),
    ("TOO_MANY_INVITATIONS", Reason::TooManyInvitations),
    ("BAD_SEQ", Reason::BadSeq),
    ("STORE_UNAVAILABLE", Reason::StoreUnavailable),
    ("SERVER_ERROR", Reason::ServerError),
    ("FIRST_MESSAGE_TIMEOUT", Reason::FirstMessageTimeout),
    ("SERVER_SHUTTING_DOWN", Reason::ServerShuttingDown),
    ("MATCH_DAMAGED", Reason::MatchDamaged),
    ("DATABASE_DAMAGED", Reason::DatabaseDamaged),
    ("MATCH_ELSEWHERE", Reason::MatchElsewhere),
    ("WORKER_UNAVAILABLE", Reason::WorkerUnavailable),
    ("GAVE_UP", Reason::GaveUp),
    ("UNKNOWN_GAME", Reason::UnknownGame),
];

impl Reason {
    /// The reason as the server spells it (`ILLEGAL_MOVE`).
    pub fn as_str(&self) -> &str {
        match self {
            Reason::Other(text) => text,
            known => NAMES
                .iter()
                .find(|(_, r)| r == known)
                .map(|(name, _)| *name)
                .unwrap_or(""),
        }
    }

    /// Parses the server's spelling; unknown text becomes [`Reason::Other`].
    pub fn parse(text: &str) -> Reason {
        NAMES
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, reason)| reason.clone())
            .unwrap_or_else(|| Reason::Other(text.to_string()))
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A call the server refused (or that could not reach it): the gRPC status code, the
/// machine-readable reason when the server gave one, and the human message.
#[derive(Debug, Clone)]
pub struct Error {
    pub code: Code,
    pub reason: Option<Reason>,
    pub message: String,
    /// For a `MATCH_ELSEWHERE` refusal, the address of the worker that owns the match (the
    /// ErrorInfo metadata `address`; `:PORT` = the host connected to).
    pub owner_address: Option<String>,
}

impl Error {
    pub(crate) fn new(code: Code, reason: Option<Reason>, message: impl Into<String>) -> Self {
        Error {
            code,
            reason,
            message: message.into(),
            owner_address: None,
        }
    }

    /// True when the failure is the connection's (or the server going away), not a refusal of
    /// the request itself: the call may be retried.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.code,
            Code::Unavailable | Code::Cancelled | Code::DeadlineExceeded | Code::Internal | Code::Unknown
        )
    }
}

impl From<tonic::Status> for Error {
    /// Decodes the `google.rpc.ErrorInfo` carried in `grpc-status-details-bin`.
    fn from(status: tonic::Status) -> Self {
        let info = status
            .get_details_error_info()
            .filter(|info| info.domain == "ziggurat" || info.domain.is_empty());
        let owner_address = info
            .as_ref()
            .filter(|info| info.reason == "MATCH_ELSEWHERE")
            .and_then(|info| info.metadata.get("address").cloned());
        let reason = info.map(|info| Reason::parse(&info.reason));
        // tonic reports a connection that failed below gRPC (refused, reset, a TLS or HTTP/2
        // failure) as UNKNOWN with the cause attached: that is the server being unreachable.
        if status.code() == Code::Unknown
            && reason.is_none()
            && let Some(cause) = std::error::Error::source(&status)
        {
            let mut text = status.message().to_string();
            let mut source = Some(cause);
            while let Some(cause) = source {
                text = format!("{text}: {cause}");
                source = cause.source();
            }
            return Error::new(Code::Unavailable, None, text);
        }
        let mut error = Error::new(status.code(), reason, status.message());
        error.owner_address = owner_address;
        error
    }
}

impl From<tonic::transport::Error> for Error {
    fn from(error: tonic::transport::Error) -> Self {
        let mut text = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            text = format!("{text}: {cause}");
            source = cause.source();
        }
        Error::new(Code::Unavailable, None, text)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            Some(reason) => write!(f, "{:?} {}: {}", self.code, reason, self.message),
            None => write!(f, "{:?}: {}", self.code, self.message),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason this client names is one the server's registry lists (reasons added to
    /// the registry later still arrive, as `Reason::Other`).
    #[test]
    fn reasons_are_the_servers() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../server/ziggurat/wire/reasons.py"
        );
        let registry = std::fs::read_to_string(path).expect("server/ziggurat/wire/reasons.py");
        let listed: Vec<&str> = registry
            .lines()
            .filter_map(|line| {
                line.strip_prefix("    ")?
                    .split_once(" = (")
                    .map(|(name, _)| name)
            })
            .filter(|name| name.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            .collect();
        assert!(listed.len() > 20, "parsed the registry: {listed:?}");
        for (name, reason) in NAMES {
            assert_eq!(Reason::parse(name), *reason);
            assert_eq!(reason.as_str(), *name);
            if *reason != Reason::GaveUp && *reason != Reason::UnknownGame {
                assert!(listed.contains(name), "{name} is not in the server's registry");
            }
        }
        assert_eq!(
            Reason::parse("SOMETHING_NEW"),
            Reason::Other("SOMETHING_NEW".into())
        );
    }
}
