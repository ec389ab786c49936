"""The standing arena: continuous pairing by rating, lasting ratings, a live ladder (docs/arena.md)."""
