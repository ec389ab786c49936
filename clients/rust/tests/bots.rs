//! The starter bot binary and the remote-bot loop, as a user runs them: the starter bot
//! creating and joining matches on a real server, and remote bots (the library's
//! `RemoteBot` in this process, the starter bot launched by the tournament) handed seats by
//! `ziggurat tournament run`.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{Server, ziggurat};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use ziggurat_client::{Client, RemoteBot, Turn, pb};

const STARTER: &str = env!("CARGO_BIN_EXE_random_bot");

#[test]
fn the_starter_bot_creates_and_joins_a_match() {
    let server = Server::start();
    let mut creator = Command::new(STARTER)
        .args([
            "--server",
            &server.address,
            "--create",
            "kabaleo",
            "--seats",
            "2",
            "--name",
            "creator",
        ])
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
        .args([
            "--server",
            &server.address,
            "--match",
            &match_id,
            "--name",
            "joiner",
            "--seed",
            "7",
        ])
        .output()
        .expect("starter bot");
    assert!(
        joiner.status.success(),
        "{}",
        String::from_utf8_lossy(&joiner.stderr)
    );
    let joined = String::from_utf8_lossy(&joiner.stdout);
    assert!(
        joined.contains(&format!("match {match_id} over: ranks by seat")),
        "{joined}"
    );
    let rest: Vec<String> = lines.collect();
    assert!(creator.wait().expect("wait").success());
    assert!(
        rest.iter()
            .any(|l| l.starts_with(&format!("match {match_id} over"))),
        "{rest:?}"
    );
    server.verify(&match_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn remote_bots_are_handed_seats_by_a_tournament() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("tournament.toml");
    std::fs::write(
        &config,
        format!(
            r#"name = "rust-remote-bots"
seed = "rust-remote-bots-1"
game = "pylos"
seats = 2
format = "round_robin"
concurrency = 2

[time_control]
per_move_ms = 20000
disconnect_grace_ms = 20000

[[participants]]
name = "rust-library"
remote = true
token_sha256 = "40eefbc922358370ad01cbe476dbc3eea39022976a3c3c201329f4571d5b6504" # printf %s library-secret | sha256sum

[[participants]]
name = "rust-starter"
command = ["{STARTER}"]
keep_alive = true

[[participants]]
name = "random"
builtin = "random"
"#
        ),
    )
    .expect("config");
    let mut tournament = Command::new(ziggurat())
        .args(["tournament", "run"])
        .arg(&config)
        .arg("--db")
        .arg(dir.path().join("t.db"))
        .arg("--quiet")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ziggurat tournament run");
    let stderr = tournament.stderr.take().expect("stderr");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("tournament: {line}");
            if let Some((_, address)) = line.split_once(" — server ") {
                let _ = sender.send(address.trim().to_string());
            }
        }
    });
    let address = receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("the tournament's server address");

    let client = Client::connect(&address).await.expect("connect");
    let (finished, mut results) = tokio::sync::mpsc::unbounded_channel();
    let bot = RemoteBot::new(&client, "rust-library", "library-secret")
        .games([pb::Game::Pylos])
        .max_matches(2)
        .on_finished(finished);
    let serving = tokio::spawn(bot.run(|assignment: &pb::Assignment| {
        let mut rng = StdRng::seed_from_u64(assignment.bot_seed);
        move |turn: &Turn| turn.legal_moves.choose(&mut rng).expect("move").clone()
    }));

    let status = tokio::task::spawn_blocking(move || {
        let output = tournament.wait_with_output().expect("tournament");
        (output.status, String::from_utf8_lossy(&output.stdout).to_string())
    });
    let (status, standings) = tokio::time::timeout(Duration::from_secs(300), status)
        .await
        .expect("in time")
        .expect("join");
    assert!(status.success(), "{standings}");
    serving.abort();

    // Round robin of three: each bot plays both colours against both others.
    let mut played = Vec::new();
    while let Ok((assignment, ended)) = results.try_recv() {
        let ended = ended.unwrap_or_else(|e| panic!("match {}: {e}", assignment.match_id));
        assert!(ended.outcome.is_some());
        played.push(assignment);
    }
    assert_eq!(played.len(), 4, "{standings}");
    let mut seats: Vec<u32> = played.iter().map(|a| a.seat).collect();
    seats.sort();
    assert_eq!(seats, [1, 1, 2, 2]);
    for name in ["rust-library", "rust-starter", "random"] {
        let row = standings
            .lines()
            // the standings row: rank, bot, games, …
            .find(|l| {
                l.split_whitespace().nth(1) == Some(name)
                    && l.trim_start().starts_with(|c: char| c.is_ascii_digit())
            })
            .unwrap_or_else(|| panic!("{name}: {standings}"));
        let games: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(games[2], "4", "{name} played 4 games: {standings}");
        assert!(!row.contains("DISQUALIFIED"), "{standings}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_remote_bot_is_invited_into_a_match() {
    let server = common::Server::start();
    let client = Client::connect(&server.address).await.expect("connect");
    let (finished, mut results) = tokio::sync::mpsc::unbounded_channel();
    let bot = RemoteBot::new(&client, "rust-invited", "invited-secret")
        .games([pb::Game::Kabaleo])
        .max_matches(1)
        .on_finished(finished);
    let serving = tokio::spawn(bot.run(|assignment: &pb::Assignment| {
        let mut rng = StdRng::seed_from_u64(assignment.bot_seed);
        move |turn: &Turn| turn.legal_moves.choose(&mut rng).expect("move").clone()
    }));
    // Wait until the server lists it.
    let listed = loop {
        let bots = client.list_bots().await.expect("list bots");
        if let Some(bot) = bots.into_iter().find(|b| b.name == "rust-invited") {
            break bot;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(listed.max_matches, 1);

    let options = ziggurat_client::CreateOptions::default();
    let pylos = client
        .create_match(ziggurat_client::pylos(), options.clone())
        .await
        .expect("create");
    let missing = client
        .invite_bot(pylos.match_id(), "", "rust-invited", 0)
        .await
        .expect_err("only the creator invites");
    assert_eq!(missing.reason, Some(ziggurat_client::Reason::MissingToken));
    let created = client
        .create_match(ziggurat_client::kabaleo(2), options)
        .await
        .expect("create");
    let wrong = client
        .invite_bot(pylos.match_id(), &created.creator_token, "rust-invited", 0)
        .await
        .expect_err("another match's creator token");
    assert_eq!(wrong.reason, Some(ziggurat_client::Reason::BadToken));
    let refused = client
        .invite_bot(pylos.match_id(), &pylos.creator_token, "rust-invited", 0)
        .await
        .expect_err("plays Kabaleo only");
    assert_eq!(refused.reason, Some(ziggurat_client::Reason::BotGame));
    let nobody = client
        .invite_bot(pylos.match_id(), &pylos.creator_token, "nobody", 0)
        .await
        .expect_err("not connected");
    assert_eq!(nobody.reason, Some(ziggurat_client::Reason::BotNotConnected));

    let (seat, _) = client
        .invite_bot(created.match_id(), &created.creator_token, "rust-invited", 0)
        .await
        .expect("invite");
    let me = client.join(created.match_id(), "me", 0).await.expect("join");
    assert_ne!(me.seat, seat);
    let mut rng = StdRng::seed_from_u64(1);
    let ended = client
        .play(&me, |turn| {
            turn.legal_moves.choose(&mut rng).expect("move").clone()
        })
        .await;
    let ended = ended.expect("the match ends");
    let (assignment, result) = tokio::time::timeout(Duration::from_secs(30), results.recv())
        .await
        .expect("in time")
        .expect("a result");
    serving.abort();
    assert_eq!(
        (assignment.match_id.as_str(), assignment.seat),
        (created.match_id(), seat)
    );
    assert_eq!(result.expect("the bot's match ends").outcome, ended.outcome);
    let record = client.record(created.match_id()).await.expect("record");
    assert!(
        record.moves.iter().any(|m| m.seat == seat && !m.substituted),
        "the bot played its own moves"
    );
    server.verify(created.match_id());
}
