// Hash routes: #/ (lobby), #/match/ID (play or watch), #/replay/ID (step through a finished match),
// #/tournament[/ID] (the live tournament page of a `ziggurat tournament run` server).
export type Route =
  | { name: "lobby" }
  | { name: "match"; id: string }
  | { name: "replay"; id: string }
  | { name: "tournament"; id: string };

export function currentRoute(): Route {
  const path = window.location.hash.replace(/^#/, "") || "/";
  const match = /^\/(match|replay|tournament)\/([A-Za-z0-9_-]{1,64})$/.exec(path);
  if (match) return { name: match[1] as "match" | "replay" | "tournament", id: match[2] };
  if (path === "/tournament") return { name: "tournament", id: "" };
  return { name: "lobby" };
}

export function navigate(path: string): void {
  window.location.hash = `#${path}`;
}
