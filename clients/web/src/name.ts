// The player's name: typed once in the lobby, remembered in localStorage (api.ts), and checked
// here as the server checks it (server/ziggurat/service/decide.py, _join), so that a name the
// server would refuse with BAD_NAME is explained before anything is sent. The server stays the
// judge: it also refuses look-alike spellings of "(bot)", which this check does not try to see.

/** The server's limit on a player name, in characters (decide.py MAX_NAME). */
export const MAX_NAME = 64;

/** What is wrong with `name` (outer spaces trimmed) in words, or "" when the server takes it. */
export function nameProblem(raw: string): string {
  const name = raw.trim();
  if (!name) return "Type your name first: the other players see it.";
  if ([...name].length > MAX_NAME) return `A name is at most ${MAX_NAME} characters.`;
  // Python's str.isprintable: no control or format characters, no spaces other than " ".
  if (/[\p{C}\p{Z}]/u.test(name.replace(/ /g, ""))) return "A name cannot contain control characters or unusual spaces.";
  if (/\(\s*bot\s*\)$/i.test(name.replace(/\s+/g, ""))) return "A name cannot end in “(bot)”: the server marks its own bots that way.";
  return "";
}
