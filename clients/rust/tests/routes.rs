//! A match whose learnt owner address stopped answering (its worker came back on another
//! port, or the server restarted) is still served: the client forgets the route and asks the
//! address it connected to, for unary calls at once, for `Play` and `follow` on their next
//! reconnection. Here the connected address is a single server that serves the match itself.

mod common;

use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use tokio_stream::StreamExt;
use ziggurat_client::pb::event::Kind;
use ziggurat_client::{Backoff, Client, CreateOptions, PlayOptions, Reason, SeatRunner, Turn};

/// A loopback address nothing listens on (connections to it are refused).
fn dead_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").to_string()
}

fn random(seed: u64) -> impl FnMut(&Turn) -> String + Send + 'static {
    let mut rng = StdRng::seed_from_u64(seed);
    move |turn: &Turn| turn.legal_moves.choose(&mut rng).expect("a legal move").clone()
}

fn quick() -> Backoff {
    Backoff::new(Duration::from_millis(50), Duration::from_millis(500), 5)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_route_falls_back_to_the_connected_address() {
    let server = common::Server::start();
    let seats = [
        Client::connect(&server.address).await.expect("connect"),
        Client::connect(&server.address).await.expect("connect"),
    ];
    let created = seats[0]
        .create_match(ziggurat_client::pylos(), CreateOptions::default())
        .await
        .expect("create");
    let match_id = created.match_id().to_string();
    seats[0].learn_route(&match_id, &dead_address());
    let first = seats[0]
        .join(&match_id, "first", 0)
        .await
        .expect("join with a dead route");
    assert_eq!(seats[0].route(&match_id), None, "the dead route is forgotten");
    let second = seats[1].join(&match_id, "second", 0).await.expect("join");

    let watcher = Client::connect(&server.address).await.expect("connect");
    for client in seats.iter().chain([&watcher]) {
        client.learn_route(&match_id, &dead_address()); // every stream starts on a dead address
    }
    let options = PlayOptions {
        backoff: quick(),
        max_rejections: 3,
    };
    let mut runners = Vec::new();
    for (client, handle, seed) in [(seats[0].clone(), first, 1), (seats[1].clone(), second, 2)] {
        let mut runner = SeatRunner::new(client, handle).options(options.clone());
        runners.push(tokio::spawn(async move { runner.run(random(seed)).await }));
    }
    let mut events = watcher.follow(&match_id, None, 0, quick());
    let mut seqs = Vec::new();
    let mut ended = false;
    let mut played = 0;
    while let Some(event) = events.next().await {
        let event = event.expect("an event despite the dead route");
        ended = matches!(event.kind, Some(Kind::MatchEnded(_)));
        played += usize::from(matches!(event.kind, Some(Kind::MovePlayed(_))));
        seqs.push(event.seq);
    }
    assert!(ended, "followed to the end");
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "every event once, in order"
    );
    for runner in runners {
        runner
            .await
            .expect("runner task")
            .expect("played to the end despite the dead route");
    }
    watcher.learn_route(&match_id, &dead_address());
    let record = watcher
        .record(&match_id)
        .await
        .expect("the record despite the dead route");
    assert_eq!(record.moves.len(), played, "the watcher saw every move once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_from_the_owner_keeps_its_route() {
    let server = common::Server::start();
    let client = Client::connect(&server.address).await.expect("connect");
    let created = client
        .create_match(ziggurat_client::pylos(), CreateOptions::default())
        .await
        .expect("create");
    let match_id = created.match_id().to_string();
    // The owner is the server itself under another name: it answers, and refuses.
    let port = server.address.rsplit(':').next().expect("a port");
    let alias = format!("localhost:{port}");
    client.learn_route(&match_id, &alias);
    let forged = ziggurat_client::MatchHandle {
        match_id: match_id.clone(),
        seat: 1,
        token: "forged".into(),
    };
    let refused = client
        .submit_move(&forged, "x", None)
        .await
        .expect_err("a forged token");
    assert_eq!(refused.reason, Some(Reason::BadToken));
    assert_eq!(client.route(&match_id), Some(alias));
}
