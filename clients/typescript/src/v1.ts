// The generated API (proto/ziggurat/v1), for anything the client's helpers do not cover.
export * from "./gen/ziggurat/v1/game_pb.js";
export * from "./gen/ziggurat/v1/match_pb.js";
export * from "./gen/ziggurat/v1/match_service_pb.js";
export * from "./gen/ziggurat/v1/bot_service_pb.js";
