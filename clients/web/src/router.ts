// Hash routes: #/ (lobby), #/match/ID (play or watch), #/replay/ID (step through a finished match).
export type Route = { name: "lobby" } | { name: "match"; id: string } | { name: "replay"; id: string };

export function currentRoute(): Route {
  const path = window.location.hash.replace(/^#/, "") || "/";
  const match = /^\/(match|replay)\/([A-Za-z0-9_-]{1,64})$/.exec(path);
  if (match) return { name: match[1] as "match" | "replay", id: match[2] };
  return { name: "lobby" };
}

export function navigate(path: string): void {
  window.location.hash = `#${path}`;
}
