// The TypeScript starter bot: it plays uniformly random legal moves. Replace choose.
//
//   node dist/examples/random-bot.js --server 127.0.0.1:50051 --create pylos    # create, print the id, play
//   node dist/examples/random-bot.js --server 127.0.0.1:50051 --create phantom-ttt  # any game the server lists
//   node dist/examples/random-bot.js --server 127.0.0.1:50051 --match MATCH_ID  # join and play
//   node dist/examples/random-bot.js --server 127.0.0.1:50051 --remote --token SECRET  # wait for seats
import { parseArgs } from "node:util";

import { type Turn, UnknownGameError, ZigguratClient } from "../src/index.js";

function choose(turn: Turn): string {
  return turn.legalMoves[Math.floor(Math.random() * turn.legalMoves.length)];
}

const { values: args } = parseArgs({
  options: {
    server: { type: "string", default: "127.0.0.1:50051" },
    create: { type: "string" }, // any game the server lists (ListGames): pylos, kabaleo, phantom-ttt, ...
    seats: { type: "string", default: "0" }, // 0: the game's fewest
    match: { type: "string" },
    name: { type: "string", default: "ts-random" },
    remote: { type: "boolean", default: false },
    token: { type: "string", default: process.env.ZIGGURAT_BOT_TOKEN ?? "" }, // or $ZIGGURAT_BOT_TOKEN
  },
});
const client = new ZigguratClient(args.server!);
const stop = new AbortController();
process.on("SIGINT", () => stop.abort());
try {
  if (args.remote) {
    await client.runRemoteBot({
      name: args.name!,
      token: args.token!,
      maxMatches: 4,
      chooser: () => choose,
      signal: stop.signal,
      onRegistered: (name) => console.log(`connected as remote bot ${name}`),
      onMatchEnded: (assignment, result, error) =>
        console.log(`match ${assignment.matchId} ${result ? `over: rank ${result.rank}` : `failed: ${String(error)}`}`),
    });
  } else {
    let matchId = args.match;
    if (args.create) {
      // Any game the server hosts, by its name: resolved through ListGames, so this bot plays
      // games added after it was written (choose only picks among legalMoves).
      const config = await client.gameConfig(args.create, Number(args.seats)).catch((error: unknown) => {
        if (!(error instanceof UnknownGameError)) throw error;
        console.error(error.message); // one line naming the server's games
        process.exit(2);
      });
      matchId = (await client.createMatch(config)).matchId;
      console.log(`created match ${matchId}`);
    }
    const handle = await client.join(matchId!, args.name!);
    console.log(`playing seat ${handle.seat} of match ${handle.matchId}`);
    const result = await client.play(handle, choose, { signal: stop.signal });
    console.log(`match ${handle.matchId} over: ranks ${result.ended.outcome?.ranks.join(",")}, this seat ranked ${result.rank}`);
  }
} finally {
  client.close();
}
