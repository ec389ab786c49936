//! Thin client for the ziggurat game server (Kabaleo and Pylos).
//!
//! Every call is one RPC of `proto/ziggurat/v1/` (the generated types are in [`pb`]); on top
//! of that come the pieces every bot author would otherwise rediscover:
//!
//! * [`Client::play`]: the play loop. It calls one function with a [`Turn`] for each turn of
//!   the seat (only the current turn, never one replayed while catching up), and survives a
//!   dropped connection or a server restart by resuming exactly after the last event it saw.
//! * [`Error`]: every refusal with its gRPC code and the server's machine-readable
//!   [`Reason`], decoded from the `google.rpc.ErrorInfo` in `grpc-status-details-bin`.
//! * [`Client::follow`]: a spectator's (or seat's) resumable event stream.
//! * [`RemoteBot`]: the `BotService.ConnectBot` loop, one task per assignment.
//!
//! The proto field `move` is a Rust keyword: in generated types it is `r#move`
//! (`pb::PlayRequest { r#move: …, .. }`, `event.r#move`).

mod backoff;
mod client;
mod error;
mod play;
mod remote;
mod turn;

/// The generated `ziggurat.v1` messages and gRPC clients (tonic + prost, built from `proto/`).
pub mod pb {
    tonic::include_proto!("ziggurat.v1");
}

pub use backoff::Backoff;
pub use client::{
    Client, ConnectOptions, CreateOptions, CreatedMatch, MatchHandle, game_config, kabaleo, pylos,
};
pub use error::{Error, Reason};
pub use play::{PlayOptions, SeatRunner};
pub use remote::{Finished, RemoteBot};
pub use turn::Turn;
