// Full matches, typed refusals and turn handling against a real server.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import { create } from "@bufbuild/protobuf";

import {
  Code,
  type Handle,
  Reason,
  RejectedError,
  type Rejection,
  type Result,
  SeatAssignment,
  type Turn,
  ZigguratClient,
  ZigguratError,
  kabaleo,
  pylos,
  v1,
} from "../src/index.js";
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

async function playAll(config: v1.GameConfig): Promise<{ matchId: string; results: Result[] }> {
  const match = await client.createMatch(config);
  const handles: Handle[] = [];
  for (let i = 0; i < config.seats; i++) handles.push(await client.join(match.matchId, "ts"));
  const results = await Promise.all(handles.map((h, i) => client.play(h, randomChooser(i + 1).choose)));
  return { matchId: match.matchId, results };
}

async function checkFinished(matchId: string, results: Result[]): Promise<void> {
  const record = await client.record(matchId);
  const moves = record.moves.map((m) => m.move);
  assert.ok(record.moves.every((m) => !m.substituted), "every move was the bot's");
  for (const result of results) {
    assert.deepEqual(result.history, moves, `seat ${result.seat} saw every move`);
    assert.deepEqual(result.ended.outcome?.ranks, record.outcome?.ranks);
    assert.equal(typeof result.lastSeq, "bigint");
  }
  await server.verify(matchId);
}

async function refused(promise: Promise<unknown>, code: Code, reason: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ZigguratError, String(error));
    assert.equal(error.code, code);
    assert.equal(error.reason, reason);
    return true;
  });
}

describe("matches", () => {
  test("a full Pylos match, verified", { timeout: 180_000 }, async () => {
    const { matchId, results } = await playAll(pylos());
    assert.notEqual(results[0].ended.outcome?.termination, v1.Termination.UNSPECIFIED);
    await checkFinished(matchId, results);
  });

  test("a full 4-seat Kabaleo match, objectives revealed only at the end", { timeout: 180_000 }, async () => {
    const { matchId, results } = await playAll(kabaleo(4));
    assert.equal(results[0].ended.outcome?.termination, v1.Termination.NORMAL);
    for (const result of results) {
      const view = result.ended.view?.detail;
      assert.equal(view?.case, "kabaleo");
      assert.ok(!view.value.objectives.includes("?"));
    }
    await checkFinished(matchId, results);
  });
});

describe("refusals", () => {
  test("carry the gRPC code and the ErrorInfo reason", { timeout: 180_000 }, async () => {
    const match = await client.createMatch(pylos(), { seatAssignment: SeatAssignment.CHOSEN });
    const first = await client.join(match.matchId, "first", 1);
    const second = await client.join(match.matchId, "second", 2);
    await refused(client.submitMove(first, "4a1"), Code.FailedPrecondition, Reason.IllegalMove);
    await refused(client.submitMove(first, "not a move"), Code.InvalidArgument, Reason.MalformedMove);
    await refused(client.submitMove(second, "1a1"), Code.FailedPrecondition, Reason.NotYourTurn);
    await refused(client.submitMove(first, "1a1", 5), Code.FailedPrecondition, Reason.StalePly);
    await refused(client.join(match.matchId, "third"), Code.FailedPrecondition, Reason.MatchFull);
    await refused(client.cancelMatch(match.matchId, match.creatorToken), Code.FailedPrecondition, Reason.NotWaiting);
    await refused(client.getMatch("no-such-match"), Code.NotFound, Reason.MatchNotFound);
    await refused(
      client.submitMove({ matchId: match.matchId, seat: 1, token: "forged" }, "1a1"),
      Code.PermissionDenied,
      Reason.BadToken,
    );

    // On the Play stream: a typed Rejection, then the same turn asked again with it.
    const asked: Turn[] = [];
    const rejections: Rejection[] = [];
    const sly = (turn: Turn) => {
      asked.push(turn);
      return asked.length === 1 ? "4a1" : turn.legalMoves[0];
    };
    await Promise.all([
      client.play(first, sly, { onRejected: (r) => rejections.push(r) }),
      client.play(second, randomChooser(2).choose),
    ]);
    assert.equal(rejections.length, 1);
    assert.deepEqual([rejections[0].move, rejections[0].reason], ["4a1", Reason.IllegalMove]);
    assert.deepEqual([asked[0].ply, asked[1].ply], [0, 0]);
    assert.deepEqual([asked[0].rejected.length, asked[1].rejected.length], [0, 1]);
    assert.equal((await client.record(match.matchId)).moves[0].move, asked[1].legalMoves[0]);
    await server.verify(match.matchId);

    // A bot that only plays illegal moves is stopped with the refusals it got.
    const match2 = await client.createMatch(pylos(), { seatAssignment: SeatAssignment.CHOSEN });
    const stubborn = await client.join(match2.matchId, "stubborn", 1);
    await client.join(match2.matchId, "other", 2);
    await assert.rejects(client.play(stubborn, () => "4a1"), (error: unknown) => {
      assert.ok(error instanceof RejectedError, String(error));
      assert.equal(error.rejections.length, 3);
      assert.equal(error.rejections[2].reason, Reason.IllegalMove);
      return true;
    });
  });
});

describe("cancel", () => {
  test("a waiting match is cancelled with the creator token only", { timeout: 180_000 }, async () => {
    const match = await client.createMatch(kabaleo(3));
    assert.ok(match.creatorToken);
    await client.join(match.matchId, "early");
    await refused(client.cancelMatch(match.matchId, "not-the-creator"), Code.PermissionDenied, Reason.BadToken);
    const cancelled = await client.cancelMatch(match.matchId, match.creatorToken);
    assert.equal(cancelled.status, v1.MatchStatus.FINISHED);
    assert.ok(cancelled.revealedSeed);
    assert.equal((await client.record(match.matchId)).outcome?.termination, v1.Termination.ABORTED);
    await assert.rejects(client.join(match.matchId, "late"), (error: unknown) => {
      assert.ok(error instanceof ZigguratError && error.code === Code.FailedPrecondition, String(error));
      return true;
    });
  });
});

describe("turns", () => {
  test("a late joiner is asked only about the current turn, never a past one", { timeout: 180_000 }, async () => {
    const match = await client.createMatch(pylos(), { seatAssignment: SeatAssignment.CHOSEN });
    const seats = [await client.join(match.matchId, "first", 1), await client.join(match.matchId, "second", 2)];
    const opening = ["1a1", "1a2", "1a3", "1a4", "1b1", "1b2"];
    for (const [ply, move] of opening.entries()) await client.submitMove(seats[ply % 2], move, ply);
    const bots = [randomChooser(1), randomChooser(2)];
    await Promise.all(seats.map((seat, i) => client.play(seat, bots[i].choose)));
    assert.equal(bots[0].asked[0], 6);
    assert.equal(bots[1].asked[0], 7);
    for (const bot of bots) {
      bot.asked.forEach((ply, i) => i === 0 || assert.equal(ply, bot.asked[i - 1] + 2));
    }
    await server.verify(match.matchId);
  });
});

describe("time", () => {
  test("a turn read from the backlog (joining mid-turn) has only the time left", { timeout: 60_000 }, async () => {
    const timed = create(v1.TimeControlSchema, { perMoveMs: 30_000 });
    const match = await client.createMatch(pylos(), { timeControl: timed, seatAssignment: SeatAssignment.CHOSEN });
    const first = await client.join(match.matchId, "first", 1);
    const before = performance.now();
    await client.join(match.matchId, "second", 2); // seat 1's turn starts
    await sleep(2_000);
    let given = -1;
    let ran = 0;
    const asked = new Error("asked");
    await assert.rejects(
      client.play(first, (turn) => {
        given = turn.timeLeftMs;
        ran = performance.now() - before;
        throw asked;
      }),
      (error: unknown) => error === asked,
    );
    // At most 28 s is left after the 2 s sleep; at least what the turn had not yet run.
    const message = `the bot was given ${given} ms of a 30 s turn that had run about ${Math.round(ran)} ms`;
    assert.ok(given >= 26_000 && given <= 28_100 && given >= 30_000 - ran - 100, message);
  });
});
