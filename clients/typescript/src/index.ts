// @ziggurat-games/client: the TypeScript (Node) client of the ziggurat game server.
export * from "./client.js";
export * from "./errors.js";
export * from "./backoff.js";
export * as v1 from "./v1.js";
