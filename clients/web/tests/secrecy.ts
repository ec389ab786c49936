// Decodes every byte a browser page received from the API (recorded by harness.RECORD_BYTES)
// with the generated protobuf code, and reports any secret of another seat seen before the end:
// a Kabaleo objective that is not the viewer's own, an unheld colour, or the set-up seed.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { GameView } from "../src/gen/ziggurat/v1/game_pb.js";
import { MatchStatus, type Match } from "../src/gen/ziggurat/v1/match_pb.js";
import {
  AddBotResponseSchema,
  CreateMatchResponseSchema,
  GetMatchResponseSchema,
  JoinMatchResponseSchema,
  ListMatchesResponseSchema,
  WatchMatchResponseSchema,
} from "../src/gen/ziggurat/v1/match_service_pb.js";

export interface Chunk {
  id: number;
  url: string;
  bytes: number[];
}

export interface Report {
  violations: string[];
  viewsChecked: number;
  ownObjectiveSeen: number;
  bytesBeforeEnd: number;
  responses: number;
}

const UNARY = {
  GetMatch: (b: Uint8Array) => [fromBinary(GetMatchResponseSchema, b).match],
  JoinMatch: (b: Uint8Array) => [fromBinary(JoinMatchResponseSchema, b).match],
  CreateMatch: (b: Uint8Array) => [fromBinary(CreateMatchResponseSchema, b).match],
  AddBot: (b: Uint8Array) => [fromBinary(AddBotResponseSchema, b).match],
  ListMatches: (b: Uint8Array) => fromBinary(ListMatchesResponseSchema, b).matches,
} as Record<string, (b: Uint8Array) => (Match | undefined)[]>;

export function check(chunks: Chunk[], viewerSeat: number, matchId: string, seedHex: string): Report {
  const report: Report = { violations: [], viewsChecked: 0, ownObjectiveSeen: 0, bytesBeforeEnd: 0, responses: 0 };
  const byResponse = new Map<number, Chunk[]>();
  for (const chunk of chunks) byResponse.set(chunk.id, [...(byResponse.get(chunk.id) ?? []), chunk]);
  const seedBytes = Uint8Array.from(seedHex.match(/../g)!.map((b) => parseInt(b, 16)));

  const scan = (where: string, bytes: Uint8Array): void => {
    report.bytesBeforeEnd += bytes.length;
    const text = Buffer.from(bytes).toString("latin1");
    if (text.includes(seedHex)) report.violations.push(`${where}: the seed (hex) before the end`);
    if (Buffer.from(bytes).includes(Buffer.from(seedBytes))) report.violations.push(`${where}: the seed (bytes) before the end`);
  };
  const checkView = (where: string, view: GameView | undefined): void => {
    if (!view || view.detail.case !== "kabaleo") return;
    report.viewsChecked++;
    const k = view.detail.value;
    k.objectives.forEach((letter, index) => {
      if (index + 1 === viewerSeat) {
        if (letter !== "?") report.ownObjectiveSeen++;
      } else if (letter !== "?") {
        report.violations.push(`${where}: objective of seat ${index + 1} (${letter}) visible to ${viewerSeat || "a spectator"}`);
      }
    });
    if (k.unheld.some((c) => c !== "?")) report.violations.push(`${where}: unheld colours visible`);
    const field = view.position.trim().split(" ").pop() ?? "";
    const [objectives, unheld] = field.split("+");
    [...objectives].forEach((letter, index) => {
      if (index + 1 !== viewerSeat && letter !== "?") report.violations.push(`${where}: position text shows seat ${index + 1}'s objective`);
    });
    if ((unheld ?? "").replace(/\?/g, "")) report.violations.push(`${where}: position text shows the unheld colours`);
  };

  for (const [id, parts] of byResponse) {
    report.responses++;
    const method = parts[0].url.split("/").pop() ?? "";
    const body = Uint8Array.from(parts.flatMap((p) => p.bytes));
    if (method === "WatchMatch") {
      let offset = 0;
      let ended = false;
      while (offset + 5 <= body.length && !ended) {
        const flags = body[offset];
        const length = new DataView(body.buffer, body.byteOffset + offset + 1, 4).getUint32(0);
        const message = body.subarray(offset + 5, offset + 5 + length);
        offset += 5 + length;
        if (flags & 2) continue; // end of stream (status), JSON
        const response = fromBinary(WatchMatchResponseSchema, message);
        // The message that carries match_ended is the end: the last move's view (a finished
        // game) travels with it, committed together, and reveals as the end does.
        if (response.events.some((e) => e.kind.case === "matchEnded")) {
          ended = true;
          break;
        }
        for (const event of response.events) {
          if (event.matchId !== matchId) continue;
          const where = `WatchMatch#${id} seq ${event.seq}`;
          if (event.kind.case === "matchStarted") checkView(where, event.kind.value.view);
          if (event.kind.case === "movePlayed") checkView(where, event.kind.value.view);
        }
        scan(`WatchMatch#${id}`, message);
      }
    } else if (UNARY[method]) {
      for (const match of UNARY[method](body)) {
        if (!match || match.matchId !== matchId || match.status === MatchStatus.FINISHED) continue;
        if (match.revealedSeed) report.violations.push(`${method}#${id}: revealed seed before the end`);
        checkView(`${method}#${id}`, match.view);
        scan(`${method}#${id}`, body);
      }
    }
  }
  return report;
}

/** A WatchMatch response as a browser would receive it, in which seat 2's objective leaks:
 * the checker's own test feeds it in to show that a leak is reported. */
export function leakingChunk(matchId: string, position = "RR/G/B/O RRR/GGG 2 1 ?B+??"): Chunk {
  const response = create(WatchMatchResponseSchema, {
    events: [{
      seq: 9n, matchId,
      kind: { case: "movePlayed", value: { seat: 1, move: "R1", view: {
        position,
        detail: { case: "kabaleo", value: { stacks: ["RR", "G", "B", "O"], objectives: ["?", "B"], unheld: ["?", "?"] } },
      } } },
    }],
  });
  const message = toBinary(WatchMatchResponseSchema, response);
  const envelope = new Uint8Array(5 + message.length);
  new DataView(envelope.buffer).setUint32(1, message.length);
  envelope.set(message, 5);
  return { id: 1, url: "http://x/ziggurat.v1.MatchService/WatchMatch", bytes: Array.from(envelope) };
}
