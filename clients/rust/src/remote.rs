use std::sync::Arc;

use tokio::sync::{Semaphore, mpsc};
use tonic::Code;

use crate::backoff::Backoff;
use crate::client::{Client, MatchHandle, authorized};
use crate::error::{Error, Reason};
use crate::pb;
use crate::pb::connect_bot_response::Kind;
use crate::play::SeatRunner;
use crate::turn::Turn;

/// What a finished assignment reports: the seat it was, and how its match ended.
pub type Finished = (pb::Assignment, Result<pb::MatchEndedEvent, Error>);

/// A remote bot (`BotService.ConnectBot`): it connects once under a name and plays every
/// seat an organiser hands it (a tournament, or a person inviting it), each in a task of its
/// own, at most `max_matches` at a time. A dropped connection is re-established with backoff;
/// seats already being played carry on independently.
pub struct RemoteBot {
    client: Client,
    name: String,
    token: String,
    games: Vec<pb::Game>,
    max_matches: u32,
    backoff: Backoff,
    finished: Option<mpsc::UnboundedSender<Finished>>,
}

impl RemoteBot {
    /// A bot connecting as `name` with its bot `token` (the first connection under a name
    /// registers it with that token; later ones must show the same token).
    pub fn new(client: &Client, name: &str, token: &str) -> RemoteBot {
        RemoteBot {
            client: client.clone(),
            name: name.to_string(),
            token: token.to_string(),
            games: Vec::new(),
            max_matches: 1,
            backoff: Backoff::new(
                std::time::Duration::from_millis(100),
                std::time::Duration::from_secs(5),
                u32::MAX,
            ),
            finished: None,
        }
    }

    /// The games it accepts (default: all).
    pub fn games(mut self, games: impl IntoIterator<Item = pb::Game>) -> Self {
        self.games = games.into_iter().collect();
        self
    }

    /// How many matches it plays at once (default 1).
    pub fn max_matches(mut self, max_matches: u32) -> Self {
        self.max_matches = max_matches.max(1);
        self
    }

    /// Reports every finished assignment on `sender`.
    pub fn on_finished(mut self, sender: mpsc::UnboundedSender<Finished>) -> Self {
        self.finished = Some(sender);
        self
    }

    /// Serves assignments until a refusal that retrying cannot fix (`BAD_TOKEN`,
    /// `ALREADY_CONNECTED`…), which is returned. `make_bot` makes the move function of each
    /// seat (e.g. seeded with `assignment.bot_seed`).
    pub async fn run<M, F>(mut self, mut make_bot: M) -> Result<(), Error>
    where
        M: FnMut(&pb::Assignment) -> F,
        F: FnMut(&Turn) -> String + Send + 'static,
    {
        let slots = Arc::new(Semaphore::new(self.max_matches as usize));
        loop {
            let failure = match self.session(&mut make_bot, &slots).await {
                Ok(()) => Error::new(Code::Unavailable, None, "the ConnectBot stream ended"),
                Err(error) if error.is_retryable() => error,
                Err(error) => return Err(error),
            };
            match self.backoff.next_delay() {
                Some(delay) => tokio::time::sleep(delay).await,
                None => {
                    return Err(Error::new(
                        Code::Unavailable,
                        Some(Reason::GaveUp),
                        failure.message,
                    ));
                }
            }
        }
    }

    async fn session<M, F>(&mut self, make_bot: &mut M, slots: &Arc<Semaphore>) -> Result<(), Error>
    where
        M: FnMut(&pb::Assignment) -> F,
        F: FnMut(&Turn) -> String + Send + 'static,
    {
        let message = pb::ConnectBotRequest {
            name: self.name.clone(),
            games: self.games.iter().map(|g| *g as i32).collect(),
            max_matches: self.max_matches,
        };
        let request = authorized(message, Some(&self.token));
        let mut stream = self.client.bot_service().connect_bot(request).await?.into_inner();
        while let Some(response) = stream.message().await? {
            self.backoff.reset();
            let Some(Kind::Assignment(assignment)) = response.kind else {
                continue;
            };
            let choose = make_bot(&assignment);
            let client = self.client.clone();
            let finished = self.finished.clone();
            // The server hands out at most max_matches at once; the permit keeps this side
            // honest too if an old match is still finishing after a reconnection.
            let permit = slots
                .clone()
                .acquire_owned()
                .await
                .expect("the semaphore is never closed");
            tokio::spawn(async move {
                let handle = MatchHandle {
                    match_id: assignment.match_id.clone(),
                    seat: assignment.seat,
                    token: assignment.token.clone(),
                };
                let result = SeatRunner::new(client, handle).run(choose).await;
                drop(permit);
                if let Some(finished) = finished {
                    let _ = finished.send((assignment, result));
                }
            });
        }
        Ok(())
    }
}
