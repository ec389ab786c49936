package org.ziggurat.client;

import org.ziggurat.v1.Match;

/**
 * A match just created, and the secret of its creator (cancel it while it waits, invite bots into it).
 *
 * @param match the match as a spectator sees it
 * @param creatorToken secret: lets its holder cancel the match while it is waiting and invite
 *     connected remote bots into it
 */
public record CreatedMatch(Match match, String creatorToken) {
  public String matchId() {
    return match.getMatchId();
  }

  @Override
  public String toString() {
    return "CreatedMatch[matchId=" + matchId() + "]";
  }
}
