//! The client against `ziggurat serve --workers 2` (docs/scaling.md): a match owned by worker
//! 1 is joined, played, watched and recorded through worker 0 and the public address; the
//! client follows `MATCH_ELSEWHERE` and `Match.server_address` by itself.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use tokio_stream::StreamExt;
use ziggurat_client::pb::event::Kind;
use ziggurat_client::{Backoff, Client, CreateOptions, PlayOptions, Reason, SeatRunner, Turn, pb};

/// `ziggurat serve --workers 2`, killed when dropped.
struct Workers {
    _dir: tempfile::TempDir,
    child: Child,
    /// The public address, then worker 0's and worker 1's own.
    addresses: Vec<String>,
}

impl Workers {
    fn start() -> Workers {
        let dir = tempfile::tempdir().expect("temporary directory");
        let log = std::fs::File::create(dir.path().join("server.log")).expect("server log");
        let mut child = Command::new(common::ziggurat())
            .args([
                "serve",
                "--workers",
                "2",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-mdns",
            ])
            .args(["--grace", "1", "--db"])
            .arg(dir.path().join("z.db"))
            .env("PYTHONUNBUFFERED", "1")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("ziggurat serve --workers 2");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let mut addresses = Vec::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(address) = line.strip_prefix("ziggurat listening on ") {
                    addresses.push(address.trim().to_string());
                }
                if let Some((_, ports)) = line.split_once("own ports ") {
                    for port in ports.trim_end_matches(')').split(", ") {
                        addresses.push(format!("127.0.0.1:{port}"));
                    }
                    let _ = sender.send(addresses.clone());
                }
            }
        });
        let addresses = receiver
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| {
                let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default();
                panic!("the workers did not start:\n{log}")
            });
        assert_eq!(addresses.len(), 3, "{addresses:?}");
        Workers {
            _dir: dir,
            child,
            addresses,
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn random(seed: u64) -> impl FnMut(&Turn) -> String + Send + 'static {
    let mut rng = StdRng::seed_from_u64(seed);
    move |turn: &Turn| turn.legal_moves.choose(&mut rng).expect("a legal move").clone()
}

fn quick() -> Backoff {
    Backoff::new(Duration::from_millis(50), Duration::from_millis(500), 400)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn follows_the_worker_that_owns_the_match() {
    let workers = Workers::start();
    let (public, worker0, worker1) = (
        &workers.addresses[0],
        &workers.addresses[1],
        &workers.addresses[2],
    );
    let owner = Client::connect(worker1).await.expect("connect worker 1");
    let created = owner
        .create_match(ziggurat_client::pylos(), CreateOptions::default())
        .await
        .expect("create");
    let match_id = created.match_id().to_string();
    assert_eq!(&created.r#match.server_address, worker1);

    // The raw call through worker 0 is refused, naming the owner: what the client follows.
    let other = Client::connect(worker0).await.expect("connect worker 0");
    let raw = other
        .match_service()
        .join_match(pb::JoinMatchRequest {
            match_id: match_id.clone(),
            player_name: "raw".into(),
            seat: 0,
        })
        .await
        .expect_err("another worker's match");
    let refused = ziggurat_client::Error::from(raw);
    assert_eq!(refused.code, tonic::Code::FailedPrecondition);
    assert_eq!(refused.reason, Some(Reason::MatchElsewhere));
    let named = refused.owner_address.expect("the owner's address");
    assert!(
        worker1.ends_with(&named[named.rfind(':').expect("a port")..]),
        "{named}"
    );

    // The client follows it: the join through worker 0 lands on worker 1 and is remembered.
    assert_eq!(other.route(&match_id), None);
    let first = other
        .join(&match_id, "first", 0)
        .await
        .expect("join through worker 0");
    assert_eq!(other.route(&match_id).as_ref(), Some(worker1));
    let via_public = Client::connect(public).await.expect("connect public");
    let second = via_public
        .join(&match_id, "second", 0)
        .await
        .expect("join through the public address");

    // The single WatchMatch call through worker 0 is followed to the owner too.
    let raw_watcher = Client::connect(worker0).await.expect("connect worker 0");
    let mut stream = raw_watcher
        .watch(&match_id, None, 0)
        .await
        .expect("watch through worker 0");
    let batch = stream.message().await.expect("a batch").expect("not ended");
    assert!(!batch.events.is_empty());
    assert_eq!(raw_watcher.route(&match_id).as_ref(), Some(worker1));
    drop(stream);

    let options = PlayOptions {
        backoff: quick(),
        max_rejections: 3,
    };
    let mut runners = Vec::new();
    for (client, handle, seed) in [(other.clone(), first, 1), (via_public.clone(), second, 2)] {
        let mut runner = SeatRunner::new(client, handle).options(options.clone());
        runners.push(tokio::spawn(async move { runner.run(random(seed)).await }));
    }
    let watcher = Client::connect(worker0).await.expect("connect worker 0");
    let mut events = watcher.follow(&match_id, None, 0, quick());
    let mut watched = Vec::new();
    while let Some(event) = events.next().await {
        watched.push(event.expect("an event"));
    }
    assert_eq!(watcher.route(&match_id).as_ref(), Some(worker1));
    let mut outcomes = Vec::new();
    for runner in runners {
        outcomes.push(
            runner
                .await
                .expect("runner task")
                .expect("played to the end")
                .outcome,
        );
    }
    assert_eq!(outcomes[0], outcomes[1]);

    // The seat that joined through the public address plays on its owner's address.
    assert_eq!(via_public.route(&match_id).as_ref(), Some(worker1));
    let record = other.record(&match_id).await.expect("record");
    assert!(!record.moves.is_empty());
    assert!(matches!(
        watched.last().and_then(|e| e.kind.as_ref()),
        Some(Kind::MatchEnded(_))
    ));
    let played = watched
        .iter()
        .filter(|e| matches!(e.kind, Some(Kind::MovePlayed(_))))
        .count();
    assert_eq!(played, record.moves.len(), "the watcher saw every move once");
    let seen = other.get_match(&match_id, None).await.expect("get match");
    assert_eq!(&seen.server_address, worker1);
}
