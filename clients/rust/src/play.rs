use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

use crate::backoff::Backoff;
use crate::client::{Client, MAX_REDIRECTS, MatchHandle, authorized};
use crate::error::{Error, Reason};
use crate::pb;
use crate::pb::event::Kind;
use crate::turn::Turn;

/// Tuning of the play loop.
#[derive(Debug, Clone)]
pub struct PlayOptions {
    /// Reconnection policy after a dropped stream.
    pub backoff: Backoff,
    /// How many refused moves (illegal or malformed) one turn may have before the loop gives
    /// up with that reason; each refusal asks the bot again, with [`Turn::rejected`] filled.
    pub max_rejections: usize,
}

impl Default for PlayOptions {
    fn default() -> Self {
        PlayOptions {
            backoff: Backoff::default(),
            max_rejections: 3,
        }
    }
}

type OnEvent = Box<dyn FnMut(&pb::Event) + Send>;

/// Plays one seat of one match to its end on the bidirectional `Play` stream.
///
/// * The bot function is called only for the turn that is current: while the stream
///   replays history after a (re)connection, turns already answered are skipped.
/// * When the stream drops (network, server restart) it reconnects with backoff and
///   resumes after the last event handled (`after_seq`). A turn whose move was sent but not
///   yet acknowledged is replayed, and the move already chosen for that ply is sent again
///   without asking the bot twice; the ply guard makes a duplicate harmless.
pub struct SeatRunner {
    client: Client,
    handle: MatchHandle,
    options: PlayOptions,
    on_event: Option<OnEvent>,
    config: Option<pb::GameConfig>,
    view: Option<pb::GameView>,
    /// Newest event handled.
    pub last_seq: u64,
    /// Moves played so far, in order.
    pub history: Vec<String>,
    /// Every refusal the server sent on the stream.
    pub rejections: Vec<pb::MoveRejected>,
    /// How many times the bot function was called.
    pub decisions: u64,
    pending_turn_seq: Option<u64>,
    chosen: Option<(u32, String)>,
    turn: Option<Turn>,
    /// When `turn`'s time runs out, on this machine's monotonic clock.
    deadline: Instant,
}

impl Client {
    /// Plays `handle`'s seat until the match ends, calling `choose` once per turn of the
    /// seat; returns the `MatchEnded` event. See [`SeatRunner`] for the guarantees.
    pub async fn play<F>(&self, handle: &MatchHandle, choose: F) -> Result<pb::MatchEndedEvent, Error>
    where
        F: FnMut(&Turn) -> String,
    {
        SeatRunner::new(self.clone(), handle.clone()).run(choose).await
    }
}

impl SeatRunner {
    pub fn new(client: Client, handle: MatchHandle) -> SeatRunner {
        SeatRunner {
            client,
            handle,
            options: PlayOptions::default(),
            on_event: None,
            config: None,
            view: None,
            last_seq: 0,
            history: Vec::new(),
            rejections: Vec::new(),
            decisions: 0,
            pending_turn_seq: None,
            chosen: None,
            turn: None,
            deadline: Instant::now(),
        }
    }

    /// Replaces the default [`PlayOptions`].
    pub fn options(mut self, options: PlayOptions) -> Self {
        self.options = options;
        self
    }

    /// Calls `on_event` once for every event of the match, in order (replays excluded).
    pub fn on_event(mut self, on_event: impl FnMut(&pb::Event) + Send + 'static) -> Self {
        self.on_event = Some(Box::new(on_event));
        self
    }

    /// The seat being played.
    pub fn handle(&self) -> &MatchHandle {
        &self.handle
    }

    /// Plays to the end; an `Err` is a refusal that retrying cannot fix (or `GAVE_UP`).
    pub async fn run<F>(&mut self, mut choose: F) -> Result<pb::MatchEndedEvent, Error>
    where
        F: FnMut(&Turn) -> String,
    {
        let mut redirects = 0;
        loop {
            let failure = match self.session(&mut choose).await {
                Ok(Some(ended)) => return Ok(ended),
                Ok(None) => Error::new(Code::Unavailable, None, "the Play stream ended early"),
                Err(error) if error.owner_address.is_some() => {
                    // Another worker owns the match (docs/scaling.md): reconnect there, at once
                    // a few times in a row, then with backoff (the owner may still be starting).
                    let owner = error.owner_address.clone().unwrap_or_default();
                    self.client.learn_route(&self.handle.match_id, &owner);
                    if redirects < MAX_REDIRECTS {
                        redirects += 1;
                        continue;
                    }
                    error
                }
                Err(error) if error.is_retryable() => {
                    // The owner's address stopped answering: the next session asks the connected one.
                    let route = self.client.route(&self.handle.match_id);
                    self.client
                        .forget_route(&self.handle.match_id, route.as_deref(), &error);
                    error
                }
                Err(error) => return Err(error),
            };
            redirects = 0;
            match self.options.backoff.next_delay() {
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

    async fn session<F>(&mut self, choose: &mut F) -> Result<Option<pb::MatchEndedEvent>, Error>
    where
        F: FnMut(&Turn) -> String,
    {
        // Where the log stands now: events up to `head` are history being replayed, and a
        // turn among them counts only if nothing after it (up to `head`) ended it.
        let current = self
            .client
            .get_match(&self.handle.match_id, Some(&self.handle))
            .await?;
        self.options.backoff.reset();
        if self.config.is_none() {
            self.config = current.config.clone();
        }
        let head = current.last_seq;
        let resume = self
            .pending_turn_seq
            .map_or(self.last_seq, |seq| seq.saturating_sub(1));
        let mut caught_up = resume >= head;

        let (sender, receiver) = mpsc::channel::<pb::PlayRequest>(8);
        let first = pb::PlayRequest {
            match_id: self.handle.match_id.clone(),
            after_seq: resume,
            ..Default::default()
        };
        sender.send(first).await.expect("the receiver is alive");
        let request = authorized(ReceiverStream::new(receiver), Some(&self.handle.token));
        let mut stream = self
            .client
            .service_for(&self.handle.match_id)
            .play(request)
            .await?
            .into_inner();

        // This seat's newest turn, and when its time runs out on this machine's clock.
        let mut candidate: Option<(pb::TurnStartedEvent, Instant)> = None;
        while let Some(response) = stream.message().await? {
            let received_at = Instant::now();
            self.options.backoff.reset();
            if let Some(rejected) = response.move_rejected {
                self.rejected(rejected, &sender, choose).await?;
            }
            for event in response.events {
                let seq = event.seq;
                let time_ms = event.time_ms;
                let fresh = seq > self.last_seq;
                self.last_seq = self.last_seq.max(seq);
                if fresh && let Some(on_event) = self.on_event.as_mut() {
                    on_event(&event);
                }
                match event.kind {
                    Some(Kind::MatchStarted(started)) => self.view = started.view,
                    Some(Kind::MovePlayed(played)) => {
                        self.view = played.view;
                        if fresh {
                            self.history.push(played.r#move);
                        }
                        candidate = None;
                        self.turn = None;
                        if self.pending_turn_seq.is_some_and(|pending| seq > pending) {
                            self.pending_turn_seq = None;
                        }
                    }
                    Some(Kind::TurnStarted(turn)) => {
                        if turn.seat == self.handle.seat {
                            self.pending_turn_seq = Some(seq);
                            let left = left_on_arrival(&turn, time_ms, response.server_time_ms);
                            let far = received_at + Duration::from_secs(u64::from(u32::MAX));
                            candidate = Some((turn, received_at.checked_add(left).unwrap_or(far)));
                        } else {
                            candidate = None;
                        }
                    }
                    Some(Kind::MatchEnded(ended)) => return Ok(Some(ended)),
                    _ => {}
                }
                caught_up |= seq >= head;
            }
            if caught_up && let Some((turn, deadline)) = candidate.take() {
                self.deadline = deadline;
                self.act(turn, &sender, choose).await;
            }
        }
        Ok(None)
    }

    async fn act<F>(
        &mut self,
        started: pb::TurnStartedEvent,
        sender: &mpsc::Sender<pb::PlayRequest>,
        choose: &mut F,
    ) where
        F: FnMut(&Turn) -> String,
    {
        let turn = Turn {
            match_id: self.handle.match_id.clone(),
            config: self.config.clone().unwrap_or_default(),
            seat: self.handle.seat,
            ply: started.ply,
            legal_moves: started.legal_moves,
            time_left_ms: time_left_ms(started.time_left_ms, self.deadline),
            view: self.view.clone().unwrap_or_default(),
            history: self.history.clone(),
            rejected: Vec::new(),
        };
        let mv = match &self.chosen {
            Some((ply, mv)) if *ply == turn.ply => mv.clone(),
            _ => {
                self.decisions += 1;
                choose(&turn)
            }
        };
        self.send(turn.ply, mv, sender).await;
        self.turn = Some(turn);
    }

    async fn send(&mut self, ply: u32, mv: String, sender: &mpsc::Sender<pb::PlayRequest>) {
        self.chosen = Some((ply, mv.clone()));
        // A failed send means the stream is gone: the read side notices and reconnects.
        let _ = sender
            .send(pb::PlayRequest {
                r#move: mv,
                ply: Some(ply),
                ..Default::default()
            })
            .await;
    }

    async fn rejected<F>(
        &mut self,
        rejected: pb::MoveRejected,
        sender: &mpsc::Sender<pb::PlayRequest>,
        choose: &mut F,
    ) -> Result<(), Error>
    where
        F: FnMut(&Turn) -> String,
    {
        self.rejections.push(rejected.clone());
        let reason = Reason::parse(&rejected.reason);
        let Some(mut turn) = self.turn.take() else {
            return Ok(());
        };
        // The server echoes at most 64 characters of the refused move.
        let ours = self
            .chosen
            .as_ref()
            .is_some_and(|(ply, mv)| *ply == turn.ply && mv.chars().take(64).eq(rejected.r#move.chars()));
        if !ours {
            self.turn = Some(turn);
            return Ok(());
        }
        match reason {
            Reason::IllegalMove | Reason::MalformedMove => {
                turn.rejected.push(rejected.clone());
                if turn.rejected.len() > self.options.max_rejections {
                    return Err(Error::new(
                        Code::FailedPrecondition,
                        Some(reason),
                        rejected.message,
                    ));
                }
                self.decisions += 1;
                turn.time_left_ms = time_left_ms(turn.time_left_ms, self.deadline);
                let mv = choose(&turn);
                self.send(turn.ply, mv, sender).await;
            }
            Reason::RateLimited => {
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                let mv = self.chosen.as_ref().map(|(_, mv)| mv.clone()).unwrap_or_default();
                self.send(turn.ply, mv, sender).await;
            }
            // STALE_PLY, NOT_YOUR_TURN, GAME_OVER, TIME_EXPIRED…: the turn is over; the
            // events that say what happened follow on the stream.
            _ => {}
        }
        self.turn = Some(turn);
        Ok(())
    }
}

/// What was left of a turn's time when the message carrying it was sent: `time_left_ms` less
/// what had run since the event on the server's clock (`server_time_ms - time_ms`; a turn read
/// from a resumed stream's backlog started long before, a live one just now). A server that
/// sends no `server_time_ms` (0) leaves `time_left_ms` as it is.
fn left_on_arrival(turn: &pb::TurnStartedEvent, time_ms: i64, server_time_ms: i64) -> Duration {
    let ran = if server_time_ms == 0 {
        0
    } else {
        server_time_ms.saturating_sub(time_ms).max(0).unsigned_abs()
    };
    Duration::from_millis(turn.time_left_ms.saturating_sub(ran))
}

/// The milliseconds the bot is given when asked now: what is left until `deadline` (this
/// machine's monotonic clock, never compared with the server's), at least 1; 0 stays 0
/// (untimed).
fn time_left_ms(timed: u64, deadline: Instant) -> u64 {
    if timed == 0 {
        return 0;
    }
    let left = deadline.saturating_duration_since(Instant::now()).as_millis();
    u64::try_from(left).unwrap_or(u64::MAX).max(1)
}
