package org.ziggurat.client;

/** A bot is one function: given the turn, return one of {@link Turn#legalMoves()}. */
@FunctionalInterface
public interface Bot {
  String choose(Turn turn);
}
