// The player's name: typed once in the lobby, remembered in localStorage (api.ts), and checked
// here as the server checks it (server/ziggurat/core/decide.py, _join), so that a name the
// server would refuse with BAD_NAME is explained before anything is sent. The server stays the
// judge: it also refuses look-alike spellings of "(bot)", which this check does not try to see.

import { t } from "./i18n.js";

/** The server's limit on a player name, in characters (decide.py MAX_NAME). */
export const MAX_NAME = 64;

/** What is wrong with `name` (outer spaces trimmed) in words, or "" when the server takes it. */
export function nameProblem(raw: string): string {
  const name = raw.trim();
  if (!name) return t("name.empty");
  if ([...name].length > MAX_NAME) return t("name.tooLong", { max: MAX_NAME });
  // Python's str.isprintable: no control or format characters, no spaces other than " ".
  if (/[\p{C}\p{Z}]/u.test(name.replace(/ /g, ""))) return t("name.control");
  if (/\(\s*bot\s*\)$/i.test(name.replace(/\s+/g, ""))) return t("name.bot");
  return "";
}
