package org.ziggurat.client;

/** A joined seat: the match, the 1-based seat and its secret token. */
public record MatchHandle(String matchId, int seat, String token) {
  @Override
  public String toString() {
    return "MatchHandle[matchId=" + matchId + ", seat=" + seat + "]";
  }
}
