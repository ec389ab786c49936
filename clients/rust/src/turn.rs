use std::time::Duration;

use crate::pb;

/// One decision: everything the seat to move may know when it must move.
#[derive(Debug, Clone)]
pub struct Turn {
    pub match_id: String,
    /// The game, its number of seats and its options.
    pub config: pb::GameConfig,
    /// This seat (1-based).
    pub seat: u32,
    /// Moves played so far; the move being chosen is ply `ply` (0-based).
    pub ply: u32,
    /// Every legal move in canonical notation, sorted; answer with one of them.
    pub legal_moves: Vec<String>,
    /// What is left of this turn's time when the bot is asked, in milliseconds; 0 = untimed.
    /// A turn read from a resumed stream's backlog (the bot connected or reconnected
    /// mid-turn) has been running for `PlayResponse.server_time_ms - Event.time_ms` already,
    /// both on the server's clock; the time since that message arrived is counted on this
    /// machine's monotonic clock, never compared with the server's. At least 1 when timed.
    pub time_left_ms: u64,
    /// The seat's own view of the game (position text with hidden parts as `?`).
    pub view: pb::GameView,
    /// The moves played so far, in order (canonical notation).
    pub history: Vec<String>,
    /// Moves the server already refused on this turn (empty unless the bot erred).
    pub rejected: Vec<pb::MoveRejected>,
}

impl Turn {
    /// The game being played.
    pub fn game(&self) -> pb::Game {
        self.config.game()
    }

    /// The position text as this seat sees it.
    pub fn position(&self) -> &str {
        &self.view.position
    }

    /// The time left for this move, or `None` when untimed.
    pub fn time_left(&self) -> Option<Duration> {
        (self.time_left_ms > 0).then(|| Duration::from_millis(self.time_left_ms))
    }
}
