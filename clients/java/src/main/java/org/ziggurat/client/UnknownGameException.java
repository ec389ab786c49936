package org.ziggurat.client;

import java.util.List;

/**
 * A game name the server does not list ({@link ZigguratClient#gameConfig(String, int,
 * java.util.Map)}): {@link #known()} is every name it does, so the message tells a person what
 * to type instead.
 */
public class UnknownGameException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final String game;
  private final List<String> known;

  public UnknownGameException(String game, List<String> known) {
    super("unknown game \"" + game + "\": this server hosts " + String.join(", ", known));
    this.game = game;
    this.known = List.copyOf(known);
  }

  /** The name asked for. */
  public String game() {
    return game;
  }

  /** Every game name the server lists, in its order. */
  public List<String> known() {
    return known;
  }
}
