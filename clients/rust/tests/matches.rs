//! The client against a real `ziggurat serve`: full matches, refusals, catching up, a
//! spectator, TLS, and the server killed with SIGKILL and restarted mid-match.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Server;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use tokio_stream::StreamExt;
use ziggurat_client::pb::event::Kind;
use ziggurat_client::{
    Backoff, Client, ConnectOptions, CreateOptions, MatchHandle, PlayOptions, Reason, SeatRunner, Turn, pb,
};

fn random(seed: u64) -> impl FnMut(&Turn) -> String + Send + 'static {
    let mut rng = StdRng::seed_from_u64(seed);
    move |turn: &Turn| turn.legal_moves.choose(&mut rng).expect("a legal move").clone()
}

fn quick_backoff() -> PlayOptions {
    PlayOptions {
        backoff: Backoff::new(Duration::from_millis(50), Duration::from_millis(500), 400),
        max_rejections: 3,
    }
}

/// Plays every handle with its own runner concurrently; returns each runner with its result.
async fn play_all<F>(
    client: &Client,
    handles: &[MatchHandle],
    mut make_bot: impl FnMut(u32) -> F,
) -> Vec<(SeatRunner, pb::MatchEndedEvent)>
where
    F: FnMut(&Turn) -> String + Send + 'static,
{
    let tasks: Vec<_> = handles
        .iter()
        .map(|handle| {
            let mut runner = SeatRunner::new(client.clone(), handle.clone()).options(quick_backoff());
            let bot = make_bot(handle.seat);
            tokio::spawn(async move {
                let ended = runner.run(bot).await;
                (runner, ended)
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        let (runner, ended) = tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("in time")
            .expect("task");
        results.push((runner, ended.expect("the match ends")));
    }
    results
}

async fn join_all(client: &Client, match_id: &str, seats: u32) -> Vec<MatchHandle> {
    let mut handles = Vec::new();
    for i in 0..seats {
        handles.push(
            client
                .join(match_id, &format!("rust-{i}"), 0)
                .await
                .expect("join"),
        );
    }
    handles
}

/// Every runner saw the recorded moves exactly once, in order, and decided only its own turns.
fn assert_consistent(record: &pb::MatchRecord, results: &[(SeatRunner, pb::MatchEndedEvent)]) {
    let moves: Vec<String> = record.moves.iter().map(|m| m.r#move.clone()).collect();
    assert!(!moves.is_empty());
    for (runner, ended) in results {
        assert_eq!(
            runner.history,
            moves,
            "seat {} saw every move once, in order",
            runner.handle().seat
        );
        assert_eq!(ended.outcome, record.outcome);
        let own = record
            .moves
            .iter()
            .filter(|m| m.seat == runner.handle().seat && !m.substituted)
            .count();
        assert_eq!(
            runner.decisions as usize,
            own,
            "seat {} was asked once per own turn",
            runner.handle().seat
        );
        assert!(
            runner.rejections.is_empty(),
            "no refusals: {:?}",
            runner.rejections
        );
    }
    assert!(record.moves.iter().all(|m| !m.substituted));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plays_a_full_pylos_match() {
    let server = Server::start();
    let client = Client::connect(&server.address).await.expect("connect");
    let created = client
        .create_match(ziggurat_client::pylos(), CreateOptions::default())
        .await
        .expect("create");
    assert_eq!(created.r#match.status(), pb::MatchStatus::Waiting);
    assert_eq!(created.r#match.seed_commitment.len(), 64);
    let handles = join_all(&client, created.match_id(), 2).await;
    let mut seats: Vec<u32> = handles.iter().map(|h| h.seat).collect();
    seats.sort();
    assert_eq!(seats, [1, 2]);

    let results = play_all(&client, &handles, |seat| random(seat as u64)).await;
    let record = client.record(created.match_id()).await.expect("record");
    assert_consistent(&record, &results);
    let outcome = record.outcome.clone().expect("outcome");
    let mut ranks = outcome.ranks.clone();
    ranks.sort();
    assert!(ranks == [1, 2] || ranks == [1, 1], "ranks {ranks:?}");
    let finished = client.get_match(created.match_id(), None).await.expect("get");
    assert_eq!(finished.status(), pb::MatchStatus::Finished);
    assert_eq!(finished.revealed_seed, record.revealed_seed);
    assert!(server.verify(created.match_id()).contains("verified"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plays_a_full_kabaleo_match_with_a_spectator() {
    let server = Server::start();
    let client = Client::connect(&server.address).await.expect("connect");
    let created = client
        .create_match(ziggurat_client::kabaleo(4), CreateOptions::default())
        .await
        .expect("create");
    let spectator = client.follow(created.match_id(), None, 0, Backoff::default());
    let watching = tokio::spawn(spectator.collect::<Vec<_>>());
    let handles = join_all(&client, created.match_id(), 4).await;

    let results = play_all(&client, &handles, |seat| random(100 + seat as u64)).await;
    let record = client.record(created.match_id()).await.expect("record");
    assert_consistent(&record, &results);
    assert_eq!(record.outcome.as_ref().expect("outcome").ranks.len(), 4);

    let events: Vec<pb::Event> = watching
        .await
        .expect("spectator")
        .into_iter()
        .map(|e| e.expect("event"))
        .collect();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "every event once, in order"
    );
    assert!(matches!(
        events.last().and_then(|e| e.kind.as_ref()),
        Some(Kind::MatchEnded(_))
    ));
    let mut views = 0;
    for event in &events {
        match &event.kind {
            Some(Kind::MovePlayed(played)) => {
                let view = played.view.as_ref().expect("view");
                assert_eq!(view.viewer_seat, 0);
                // The match releases its secrets only in match_ended: even the view after
                // the last move shows a spectator no objective and no outcome.
                assert!(view.outcome.is_none(), "a move's view carries no outcome");
                let Some(pb::game_view::Detail::Kabaleo(table)) = &view.detail else {
                    panic!("kabaleo view")
                };
                assert!(
                    table.objectives.iter().all(|o| o == "?"),
                    "a spectator sees no objective: {:?} {:?}",
                    table,
                    view.position
                );
                views += 1;
            }
            Some(Kind::MatchEnded(ended)) => {
                let view = ended.view.as_ref().expect("final view");
                let Some(pb::game_view::Detail::Kabaleo(table)) = &view.detail else {
                    panic!("kabaleo view")
                };
                assert!(
                    table.objectives.iter().all(|o| o != "?"),
                    "the end reveals every objective"
                );
            }
            _ => {}
        }
    }
    assert_eq!(views, record.moves.len());
    server.verify(created.match_id());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refusals_carry_their_reason_and_change_nothing() {
    let server = Server::start();
    let client = Client::connect(&server.address).await.expect("connect");

    let missing = client.join("no-such-match", "x", 0).await.expect_err("refused");
    assert_eq!(missing.code, tonic::Code::NotFound);
    assert_eq!(missing.reason, Some(Reason::MatchNotFound));

    let created = client
        .create_match(ziggurat_client::pylos(), CreateOptions::default())
        .await
        .expect("create");
    let bad_config = client.create_match(
        ziggurat_client::game_config(pb::Game::Pylos, 3),
        CreateOptions::default(),
    );
    let bad_config = bad_config.await.expect_err("three-seat Pylos");
    assert_eq!(
        (bad_config.code, bad_config.reason),
        (tonic::Code::InvalidArgument, Some(Reason::InvalidConfig))
    );

    let handles = join_all(&client, created.match_id(), 2).await;
    let full = client
        .join(created.match_id(), "late", 0)
        .await
        .expect_err("full");
    assert_eq!(
        (full.code, full.reason),
        (tonic::Code::FailedPrecondition, Some(Reason::MatchFull))
    );

    let before = client.get_match(created.match_id(), None).await.expect("get");
    let to_move = before.view.as_ref().expect("view").to_move;
    let mover = handles
        .iter()
        .find(|h| h.seat == to_move)
        .expect("seat to move")
        .clone();
    let other = handles
        .iter()
        .find(|h| h.seat != to_move)
        .expect("other seat")
        .clone();

    let cases: Vec<(&MatchHandle, &str, Option<u32>, tonic::Code, Reason)> = vec![
        (
            &mover,
            "zz",
            None,
            tonic::Code::InvalidArgument,
            Reason::MalformedMove,
        ),
        (
            &mover,
            "2a1",
            None,
            tonic::Code::FailedPrecondition,
            Reason::IllegalMove,
        ),
        (
            &mover,
            "1a1",
            Some(7),
            tonic::Code::FailedPrecondition,
            Reason::StalePly,
        ),
        (
            &other,
            "1a1",
            None,
            tonic::Code::FailedPrecondition,
            Reason::NotYourTurn,
        ),
    ];
    for (handle, mv, ply, code, reason) in cases {
        let error = client.submit_move(handle, mv, ply).await.expect_err(mv);
        assert_eq!(error.code, code, "{mv}: {error}");
        assert_eq!(error.reason, Some(reason.clone()), "{mv}: {error}");
        assert_eq!(error.reason.as_ref().map(|r| r.as_str()), Some(reason.as_str()));
    }
    let forged = MatchHandle {
        token: "forged".into(),
        ..mover.clone()
    };
    let error = client
        .submit_move(&forged, "1a1", None)
        .await
        .expect_err("forged token");
    assert_eq!(
        (error.code, error.reason),
        (tonic::Code::PermissionDenied, Some(Reason::BadToken))
    );

    let after = client.get_match(created.match_id(), None).await.expect("get");
    assert_eq!(after.last_seq, before.last_seq, "refusals change nothing");
    assert_eq!(after.view.as_ref().expect("view").ply, 0);

    // On the Play stream a refusal is a MoveRejected; the bot is asked again and sees why.
    let seen_rejections = Arc::new(Mutex::new(Vec::new()));
    let seen = seen_rejections.clone();
    let mover_seat = mover.seat;
    let results = play_all(&client, &handles, move |seat| {
        let mut rng = StdRng::seed_from_u64(seat as u64);
        let mut first = seat == mover_seat;
        let seen = seen.clone();
        move |turn: &Turn| {
            if !turn.rejected.is_empty() {
                seen.lock()
                    .expect("lock")
                    .extend(turn.rejected.iter().map(|r| r.reason.clone()));
            }
            if std::mem::take(&mut first) {
                return "2a1".to_string();
            }
            turn.legal_moves.choose(&mut rng).expect("move").clone()
        }
    })
    .await;
    let runner = &results
        .iter()
        .find(|(r, _)| r.handle().seat == mover_seat)
        .expect("mover")
        .0;
    assert_eq!(runner.rejections.len(), 1);
    assert_eq!(runner.rejections[0].reason, "ILLEGAL_MOVE");
    assert_eq!(runner.rejections[0].r#move, "2a1");
    assert_eq!(*seen_rejections.lock().expect("lock"), ["ILLEGAL_MOVE"]);
    server.verify(created.match_id());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_late_runner_answers_only_the_current_turn() {
    let server = Server::start();
    let client = Client::connect(&server.address).await.expect("connect");
    let created = client
        .create_match(ziggurat_client::pylos(), CreateOptions::default())
        .await
        .expect("create");
    let handles = join_all(&client, created.match_id(), 2).await;
    // Six plies by hand first: the log then holds three past turns of each seat.
    for _ in 0..6 {
        let public = client.get_match(created.match_id(), None).await.expect("get");
        let handle = handles
            .iter()
            .find(|h| h.seat == public.view.as_ref().expect("view").to_move)
            .expect("mover");
        let own = client
            .get_match(created.match_id(), Some(handle))
            .await
            .expect("get");
        let legal = own.view.expect("view").legal_moves;
        let ply = public.view.as_ref().expect("view").ply;
        client
            .submit_move(handle, &legal[0], Some(ply))
            .await
            .expect("move");
    }
    let results = play_all(&client, &handles, |seat| random(seat as u64)).await;
    let record = client.record(created.match_id()).await.expect("record");
    for (runner, _) in &results {
        assert_eq!(
            runner.history.len(),
            record.moves.len(),
            "replayed history is complete"
        );
        let own_later = record.moves[6..]
            .iter()
            .filter(|m| m.seat == runner.handle().seat)
            .count();
        assert_eq!(
            runner.decisions as usize, own_later,
            "asked only about turns after it connected"
        );
        assert!(
            runner.rejections.is_empty(),
            "never answered a past turn: {:?}",
            runner.rejections
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn survives_the_server_killed_and_restarted_mid_match() {
    let mut server = Server::start();
    let client = Client::connect(&server.address).await.expect("connect");
    let created = client
        .create_match(ziggurat_client::kabaleo(3), CreateOptions::default())
        .await
        .expect("create");
    let spectator = client.follow(
        created.match_id(),
        None,
        0,
        Backoff::new(Duration::from_millis(50), Duration::from_millis(500), 400),
    );
    let watching = tokio::spawn(spectator.collect::<Vec<_>>());
    let handles = join_all(&client, created.match_id(), 3).await;
    let played = Arc::new(Mutex::new(0usize));
    let tasks: Vec<_> = handles
        .iter()
        .map(|handle| {
            let played = played.clone();
            let mut runner = SeatRunner::new(client.clone(), handle.clone())
                .options(quick_backoff())
                .on_event(move |event| {
                    if matches!(event.kind, Some(Kind::MovePlayed(_))) {
                        *played.lock().expect("lock") += 1;
                    }
                });
            let mut bot = random(200 + handle.seat as u64);
            tokio::spawn(async move {
                let slow = move |turn: &Turn| {
                    std::thread::sleep(Duration::from_millis(40));
                    bot(turn)
                };
                let ended = runner.run(slow).await;
                (runner, ended)
            })
        })
        .collect();
    while *played.lock().expect("lock") < 3 * 8 / 3 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.kill9();
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.restart();

    let mut results = Vec::new();
    for task in tasks {
        let (runner, ended) = tokio::time::timeout(Duration::from_secs(120), task)
            .await
            .expect("in time")
            .expect("task");
        results.push((runner, ended.expect("the match ends after the restart")));
    }
    let record = client.record(created.match_id()).await.expect("record");
    let moves: Vec<String> = record.moves.iter().map(|m| m.r#move.clone()).collect();
    for (runner, _) in &results {
        assert_eq!(runner.history, moves, "no move lost or repeated");
        // A move sent just before the kill may be refused as stale after the restart; never an illegal one.
        assert!(
            runner
                .rejections
                .iter()
                .all(|r| r.reason == "STALE_PLY" || r.reason == "NOT_YOUR_TURN")
        );
    }
    assert!(record.moves.iter().all(|m| !m.substituted));
    let events: Vec<pb::Event> = watching
        .await
        .expect("spectator")
        .into_iter()
        .map(|e| e.expect("event"))
        .collect();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "the spectator saw every event once"
    );
    assert!(matches!(
        events.last().and_then(|e| e.kind.as_ref()),
        Some(Kind::MatchEnded(_))
    ));
    server.verify(created.match_id());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plays_over_tls() {
    // `ziggurat tls init` makes a private CA and a server certificate it signs: rustls refuses
    // a certificate that is its own CA as the server's (CaUsedAsEndEntity), so one
    // self-signed certificate would not do.
    let dir = tempfile::tempdir().expect("tempdir");
    let made = std::process::Command::new(common::ziggurat())
        .args(["tls", "init", "--host", "ziggurat.lan", "--dir"])
        .arg(dir.path())
        .output()
        .expect("ziggurat tls init");
    assert!(made.status.success(), "{made:?}");
    let (cert, key) = (dir.path().join("server.pem"), dir.path().join("server.key"));
    let ca = dir.path().join("ca.pem");
    let server = Server::start_with(&[
        "--tls-cert",
        cert.to_str().expect("path"),
        "--tls-key",
        key.to_str().expect("path"),
    ]);
    let options = ConnectOptions {
        ca_pem: Some(std::fs::read(&ca).expect("ca")),
        ..Default::default()
    };
    let client = Client::connect_with(&server.address, options)
        .await
        .expect("connect over TLS");
    let created = client
        .create_match(ziggurat_client::pylos(), CreateOptions::default())
        .await
        .expect("create");
    let handles = join_all(&client, created.match_id(), 2).await;
    let results = play_all(&client, &handles, |seat| random(seat as u64)).await;
    assert!(results[0].1.outcome.is_some());

    let plaintext = match Client::connect(&server.address).await {
        Ok(client) => client
            .list_matches(pb::MatchStatus::Unspecified, pb::Game::Unspecified)
            .await
            .map(|_| ()),
        Err(error) => Err(error),
    };
    let refused = plaintext.expect_err("plaintext refused");
    // The TLS server drops the plaintext connection; hyper reports that as a broken
    // connection (Unavailable) or, when the drop races the request, as a cancelled
    // stream (Cancelled). Either way nothing was served.
    assert!(
        matches!(refused.code, tonic::Code::Unavailable | tonic::Code::Cancelled),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_creator_cancels_a_waiting_match() {
    let server = Server::start();
    let client = Client::connect(&server.address).await.expect("connect");
    let created = client
        .create_match(ziggurat_client::kabaleo(3), CreateOptions::default())
        .await
        .expect("create");
    assert!(!created.creator_token.is_empty());
    client.join(created.match_id(), "early", 0).await.expect("join");

    let forged = client
        .cancel_match(created.match_id(), "not-the-creator")
        .await
        .expect_err("forged");
    assert_eq!(
        (forged.code, forged.reason),
        (tonic::Code::PermissionDenied, Some(Reason::BadToken))
    );
    let cancelled = client
        .cancel_match(created.match_id(), &created.creator_token)
        .await
        .expect("cancel");
    assert_eq!(cancelled.status(), pb::MatchStatus::Finished);
    let record = client.record(created.match_id()).await.expect("record");
    let outcome = record.outcome.expect("outcome");
    assert_eq!(outcome.termination(), pb::Termination::Aborted);
    assert!(!cancelled.revealed_seed.is_empty());
    let late = client
        .join(created.match_id(), "late", 0)
        .await
        .expect_err("cancelled");
    assert_eq!(late.code, tonic::Code::FailedPrecondition, "{late}");

    let started = client
        .create_match(ziggurat_client::pylos(), CreateOptions::default())
        .await
        .expect("create");
    join_all(&client, started.match_id(), 2).await;
    let refused = client
        .cancel_match(started.match_id(), &started.creator_token)
        .await
        .expect_err("started");
    assert_eq!(
        (refused.code, refused.reason),
        (tonic::Code::FailedPrecondition, Some(Reason::NotWaiting))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_turn_read_from_the_backlog_has_only_the_time_left() {
    // A bot that connects (or reconnects) mid-turn reads its TurnStarted from the backlog: it
    // is given what is left of the turn (measured on the server's clock), not the whole turn.
    let server = Server::start();
    let client = Client::connect(&server.address).await.expect("connect");
    let timed = CreateOptions {
        time_control: Some(pb::TimeControl {
            per_move_ms: 30_000,
            ..Default::default()
        }),
        seat_assignment: pb::SeatAssignment::Chosen,
        ..Default::default()
    };
    let created = client
        .create_match(ziggurat_client::pylos(), timed)
        .await
        .expect("create");
    let first = client.join(created.match_id(), "first", 1).await.expect("join");
    let before = std::time::Instant::now();
    let second = client.join(created.match_id(), "second", 2).await.expect("join"); // seat 1's turn starts
    tokio::time::sleep(Duration::from_secs(2)).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let mut runner = SeatRunner::new(client.clone(), first);
    let task = tokio::spawn(async move {
        runner
            .run(move |turn: &Turn| {
                seen.lock()
                    .expect("lock")
                    .push((turn.time_left_ms, before.elapsed()));
                turn.legal_moves[0].clone()
            })
            .await
    });
    while asked.lock().expect("lock").is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.resign(&second).await.expect("resign");
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("in time")
        .expect("task")
        .expect("the match ends");
    let (given, ran) = asked.lock().expect("lock")[0];
    // At most 28 s is left after the 2 s sleep; at least what the turn had not yet run.
    let least = 30_000u64.saturating_sub(ran.as_millis() as u64 + 100);
    assert!(
        (26_000..=28_100).contains(&given) && given >= least,
        "the bot was given {given} ms of a 30 s turn that had run about {ran:?}"
    );
}
