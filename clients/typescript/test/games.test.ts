// Any game by its name, through ListGames, on one real server: the listing, options by name,
// an unknown name, and phantom tic-tac-toe (a game with no helper here, private moves and a
// hidden board) played to a verified end by bots that read only the generic view.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Code, type Turn, UnknownGameError, ZigguratClient, ZigguratError, v1 } from "../src/index.js";
import { TestServer, randomChooser } from "./server.js";

let server: TestServer;
let client: ZigguratClient;

before(async () => {
  server = await TestServer.start();
  client = new ZigguratClient(server.address);
});
after(async () => {
  client.close();
  await server.kill();
});

describe("any game by its name", { timeout: 180_000 }, () => {
  test("listGames names every game", async () => {
    const games = await client.listGames();
    // The registry's order; games added later follow.
    assert.deepEqual(
      games.map((game) => game.name).slice(0, 3),
      ["pylos", "kabaleo", "phantom-ttt"],
    );
    for (const game of games) {
      assert.ok(game.title && game.minSeats > 0 && game.minSeats <= game.maxSeats, game.name);
    }
    assert.equal(games[2].game, v1.Game.PHANTOM_TIC_TAC_TOE);
    assert.ok(games[2].privateMoves && games[2].hiddenInformation);
  });

  test("options by name reach the match", async () => {
    let match = await client.createMatch(await client.gameConfig("pylos", 0, { variant: "beginner" }));
    assert.equal(match.config?.seats, 2);
    assert.equal(match.config?.options.case, "pylos"); // a game with a typed message answers in it
    assert.equal(match.config?.options.value?.variant, v1.PylosVariant.BEGINNER);
    match = await client.createMatch(await client.gameConfig("kabaleo", 3, { deal: "equal" }));
    assert.equal(match.config?.seats, 3);
    assert.equal(match.config?.options.case === "kabaleo" && match.config.options.value.deal, v1.KabaleoDeal.EQUAL);
  });

  test("an option the game refuses creates nothing", async () => {
    const before = (await client.listMatches()).length;
    const config = await client.gameConfig("phantom-ttt", 0, { size: "4" });
    await assert.rejects(client.createMatch(config), (error: unknown) => {
      assert.ok(error instanceof ZigguratError, String(error));
      assert.equal(error.code, Code.InvalidArgument);
      assert.equal(error.reason, "INVALID_CONFIG");
      return true;
    });
    assert.equal((await client.listMatches()).length, before);
  });

  test("an unknown name says the known ones", async () => {
    const names = (await client.listGames()).map((game) => game.name);
    await assert.rejects(client.gameConfig("chess", 2), (error: unknown) => {
      assert.ok(error instanceof UnknownGameError, String(error));
      assert.equal(error.game, "chess");
      assert.deepEqual(error.known, names);
      assert.equal(error.message, `unknown game "chess": this server hosts ${names.join(", ")}`);
      return true;
    });
  });

  test("phantom-ttt played to a verified end", async () => {
    const config = await client.gameConfig("phantom-ttt");
    assert.equal(config.game, v1.Game.PHANTOM_TIC_TAC_TOE);
    assert.equal(config.seats, 2);
    const match = await client.createMatch(config);
    const handles = [await client.join(match.matchId, "ts"), await client.join(match.matchId, "ts")];
    let positions = 0;
    const results = await Promise.all(
      handles.map((handle, i) => {
        const random = randomChooser(i + 1);
        return client.play(handle, (turn: Turn) => {
          if (turn.view?.position && turn.config?.game === v1.Game.PHANTOM_TIC_TAC_TOE) positions++;
          return random.choose(turn);
        });
      }),
    );
    const record = await client.record(match.matchId);
    assert.equal(record.outcome?.termination, v1.Termination.NORMAL);
    assert.equal(positions, record.moves.length, "every turn had the generic view");
    assert.ok(record.moves.every((m) => !m.substituted), "every move was the bot's");
    for (const result of results) {
      assert.equal(result.history.length, record.moves.length);
      // Private moves: a seat sees its own, the others' as "".
      const own = result.history.filter((move, i) => {
        assert.ok(move === "" || move === record.moves[i].move, `seat ${result.seat} move ${i + 1}: ${move}`);
        return move !== "";
      }).length;
      assert.ok(own > 0 && own < record.moves.length, `seat ${result.seat} saw ${own} of ${record.moves.length}`);
    }
    await server.verify(match.matchId);
  });
});
