//! Any game by its name, through `ListGames`, on a real server: the listing, options by name,
//! an unknown name, and phantom tic-tac-toe (a game with no helper here, private moves and a
//! hidden board) played to a verified end by bots that read only the generic view, by the
//! library and by the starter bot's `--create`.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::Server;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use ziggurat_client::{Client, CreateOptions, Reason, SeatRunner, Turn, pb};

const STARTER: &str = env!("CARGO_BIN_EXE_random_bot");

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn any_game_by_its_name() {
    let server = Server::start();
    let client = Client::connect(&server.address).await.expect("connect");

    // ListGames names every game.
    let games = client.list_games().await.expect("list games");
    let names: Vec<&str> = games.iter().map(|g| g.name.as_str()).collect();
    // The registry's order; games added later follow.
    assert_eq!(names[..3.min(names.len())], ["pylos", "kabaleo", "phantom-ttt"]);
    for game in &games {
        assert!(
            !game.title.is_empty() && game.min_seats > 0 && game.min_seats <= game.max_seats,
            "{game:?}"
        );
    }
    assert_eq!(games[2].game(), pb::Game::PhantomTicTacToe);
    assert!(games[2].private_moves && games[2].hidden_information);

    // Options by name reach the match (a game with a typed message answers in it).
    let config = client
        .game_config("pylos", 0, &[("variant", "beginner")])
        .await
        .expect("pylos");
    let created = client
        .create_match(config, CreateOptions::default())
        .await
        .expect("create");
    let got = created.r#match.config.clone().expect("config");
    assert_eq!(got.seats, 2);
    match got.options {
        Some(pb::game_config::Options::Pylos(pylos)) => {
            assert_eq!(pylos.variant(), pb::PylosVariant::Beginner)
        }
        other => panic!("options {other:?}"),
    }

    // An option the game refuses creates nothing.
    let before = client
        .list_matches(pb::MatchStatus::Unspecified, pb::Game::Unspecified)
        .await
        .expect("list")
        .len();
    let config = client
        .game_config("phantom-ttt", 0, &[("size", "4")])
        .await
        .expect("phantom-ttt");
    let refused = client
        .create_match(config, CreateOptions::default())
        .await
        .expect_err("an undeclared option");
    assert_eq!(refused.reason, Some(Reason::InvalidConfig), "{refused}");
    let after = client
        .list_matches(pb::MatchStatus::Unspecified, pb::Game::Unspecified)
        .await
        .expect("list")
        .len();
    assert_eq!(before, after);

    // An unknown name says the known ones.
    let unknown = client
        .game_config("chess", 2, &[])
        .await
        .expect_err("unknown game");
    assert_eq!(unknown.reason, Some(Reason::UnknownGame));
    assert_eq!(
        unknown.message,
        format!(r#"unknown game "chess": this server hosts {}"#, names.join(", "))
    );

    // Phantom tic-tac-toe, played to a verified end from the generic view alone.
    let config = client
        .game_config("phantom-ttt", 0, &[])
        .await
        .expect("phantom-ttt");
    assert_eq!((config.game(), config.seats), (pb::Game::PhantomTicTacToe, 2));
    let created = client
        .create_match(config, CreateOptions::default())
        .await
        .expect("create");
    let positions = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for seed in 0..2u64 {
        let handle = client.join(created.match_id(), "rust", 0).await.expect("join");
        let mut runner = SeatRunner::new(client.clone(), handle);
        let positions = positions.clone();
        let mut rng = StdRng::seed_from_u64(seed);
        tasks.push(tokio::spawn(async move {
            let ended = runner
                .run(move |turn: &Turn| {
                    if !turn.position().is_empty() && turn.game() == pb::Game::PhantomTicTacToe {
                        positions.fetch_add(1, Ordering::SeqCst);
                    }
                    turn.legal_moves.choose(&mut rng).expect("a legal move").clone()
                })
                .await;
            (runner, ended)
        }));
    }
    let record_moves = {
        let mut runners = Vec::new();
        for task in tasks {
            let (runner, ended) = task.await.expect("task");
            ended.expect("the match ends");
            runners.push(runner);
        }
        let record = client.record(created.match_id()).await.expect("record");
        assert_eq!(
            record.outcome.as_ref().map(|o| o.termination()),
            Some(pb::Termination::Normal)
        );
        for runner in &runners {
            assert_eq!(runner.history.len(), record.moves.len());
            // Private moves: a seat sees its own, the others' as "".
            let mut own = 0;
            for (seen, played) in runner.history.iter().zip(&record.moves) {
                assert!(!played.substituted);
                if !seen.is_empty() {
                    assert_eq!(seen, &played.r#move);
                    own += 1;
                }
            }
            assert!(own > 0 && own < record.moves.len(), "own moves {own}");
        }
        record.moves.len()
    };
    assert_eq!(positions.load(Ordering::SeqCst), record_moves);
    server.verify(created.match_id());
}

/// The starter bot's `--create` takes any game the server lists; an unknown name stops it with
/// one line naming those the server does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_starter_bot_creates_any_game_by_its_name() {
    let server = Server::start();
    let mut creator = Command::new(STARTER)
        .args(["--server", &server.address, "--create", "phantom-ttt"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starter bot");
    let mut lines = BufReader::new(creator.stdout.take().expect("stdout"))
        .lines()
        .map_while(Result::ok);
    let created = lines.next().expect("a first line");
    let match_id = created
        .strip_prefix("created match ")
        .expect(&created)
        .split(' ')
        .next()
        .expect("id")
        .to_string();
    let joiner = Command::new(STARTER)
        .args(["--server", &server.address, "--match", &match_id])
        .output()
        .expect("starter bot");
    assert!(
        joiner.status.success(),
        "{}",
        String::from_utf8_lossy(&joiner.stderr)
    );
    let _: Vec<String> = lines.collect();
    assert!(creator.wait().expect("wait").success());
    server.verify(&match_id);
    let client = Client::connect(&server.address).await.expect("connect");
    let record = client.record(&match_id).await.expect("record");
    let config = record.config.expect("config");
    assert_eq!((config.game(), config.seats), (pb::Game::PhantomTicTacToe, 2));
    assert!(record.moves.iter().all(|m| !m.substituted));

    let unknown = Command::new(STARTER)
        .args(["--server", &server.address, "--create", "chess"])
        .output()
        .expect("starter bot");
    assert!(!unknown.status.success());
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.starts_with("error: unknown game \"chess\": this server hosts pylos, kabaleo, phantom-ttt")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
}
