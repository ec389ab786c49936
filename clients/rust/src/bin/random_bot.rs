//! The starter bot: plays uniformly random legal moves.
//!
//!     random_bot --server 127.0.0.1:50051 --create kabaleo --seats 4   # create a match, take a seat
//!     random_bot --server 127.0.0.1:50051 --create phantom-ttt         # any game the server lists
//!     random_bot --server 127.0.0.1:50051 --match MATCH_ID             # join a match
//!     random_bot --server 127.0.0.1:50051 --remote --name NAME --token SECRET   # be handed seats
//!
//! Copy it and change `choose`: everything else is the client's job.

use std::process::ExitCode;

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use ziggurat_client::{Client, ConnectOptions, CreateOptions, MatchHandle, Reason, RemoteBot, Turn};

/// The whole bot: pick one of the legal moves.
fn choose(rng: &mut StdRng, turn: &Turn) -> String {
    turn.legal_moves.choose(rng).cloned().unwrap_or_default()
}

const USAGE: &str = "usage: random_bot [--server HOST:PORT] (--create GAME [--seats N] | --match ID | --remote --name NAME --token SECRET) [--name NAME] [--seed N] [--tls] [--ca PEM]";

#[derive(Default)]
struct Args {
    server: String,
    create: Option<String>,
    seats: u32,
    match_id: Option<String>,
    remote: bool,
    name: String,
    token: Option<String>,
    seat: u32,
    seed: Option<u64>,
    tls: bool,
    ca: Option<String>,
}

fn parse() -> Result<Args, String> {
    let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    // A tournament launching this program passes its seat (or its bot identity) in the environment.
    let mut args = Args {
        server: env("ZIGGURAT_SERVER").unwrap_or_else(|| "127.0.0.1:50051".into()),
        match_id: env("ZIGGURAT_MATCH"),
        token: env("ZIGGURAT_TOKEN").or_else(|| env("ZIGGURAT_BOT_TOKEN")),
        seat: env("ZIGGURAT_SEAT").and_then(|s| s.parse().ok()).unwrap_or(0),
        remote: env("ZIGGURAT_BOT_NAME").is_some(),
        name: env("ZIGGURAT_BOT_NAME").unwrap_or_else(|| "random-rust".into()),
        seed: env("ZIGGURAT_BOT_SEED").and_then(|s| s.parse().ok()),
        ..Args::default()
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--server" => args.server = value()?,
            "--create" => args.create = Some(value()?),
            "--seats" => args.seats = value()?.parse().map_err(|_| "--seats takes a number")?,
            "--match" => args.match_id = Some(value()?),
            "--remote" => args.remote = true,
            "--name" => args.name = value()?,
            "--token" => args.token = Some(value()?),
            "--seed" => args.seed = Some(value()?.parse().map_err(|_| "--seed takes a number")?),
            "--tls" => args.tls = true,
            "--ca" => args.ca = Some(value()?),
            "--help" | "-h" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(args)
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let ca_pem = args.ca.as_ref().map(std::fs::read).transpose()?;
    let options = ConnectOptions {
        tls: args.tls,
        ca_pem,
        domain: None,
    };
    // A remote bot outlives its server's restarts (an arena runs for days): one started while
    // the server is down waits for it, as the bot loop does after a dropped connection.
    let mut delay = std::time::Duration::from_millis(200);
    let client = loop {
        match Client::connect_with(&args.server, options.clone()).await {
            Ok(client) => break client,
            Err(error) if args.remote => {
                eprintln!(
                    "server {} unreachable ({error}); retrying in {delay:?}",
                    args.server
                );
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(5));
            }
            Err(error) => return Err(error.into()),
        }
    };
    let seed = args.seed.unwrap_or_else(|| rand::rng().random());

    if args.remote {
        let token = args
            .token
            .ok_or("--remote needs --token (or ZIGGURAT_BOT_TOKEN)")?;
        println!("connecting as remote bot {:?}", args.name);
        RemoteBot::new(&client, &args.name, &token)
            .max_matches(4)
            .run(move |assignment| {
                println!(
                    "playing seat {} of match {}",
                    assignment.seat, assignment.match_id
                );
                let mut rng = StdRng::seed_from_u64(seed ^ assignment.bot_seed);
                move |turn: &Turn| choose(&mut rng, turn)
            })
            .await?;
        return Ok(());
    }

    let handle = match (&args.create, &args.match_id, &args.token) {
        (Some(game), _, _) => {
            // Any game the server hosts, by its name (`--seats` 0: the game's fewest): resolved
            // through ListGames, so this bot plays games added after it was written.
            let config = match client.game_config(game, args.seats, &[]).await {
                // One line naming the server's games.
                Err(error) if error.reason == Some(Reason::UnknownGame) => {
                    return Err(error.message.into());
                }
                other => other?,
            };
            let created = client.create_match(config, CreateOptions::default()).await?;
            println!(
                "created match {} (commitment {})",
                created.match_id(),
                created.r#match.seed_commitment
            );
            client.join(created.match_id(), &args.name, 0).await?
        }
        (None, Some(id), Some(token)) if args.seat > 0 => MatchHandle {
            match_id: id.clone(),
            seat: args.seat,
            token: token.clone(),
        },
        (None, Some(id), _) => client.join(id, &args.name, 0).await?,
        _ => return Err(USAGE.into()),
    };
    println!(
        "playing seat {} of match {} with {}",
        handle.seat, handle.match_id, args.name
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let ended = client.play(&handle, |turn| choose(&mut rng, turn)).await?;
    let ranks = ended.outcome.map(|o| o.ranks).unwrap_or_default();
    let mine = ranks.get(handle.seat as usize - 1).copied().unwrap_or(0);
    println!(
        "match {} over: ranks by seat {ranks:?}; this seat ranked {mine}",
        handle.match_id
    );
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
