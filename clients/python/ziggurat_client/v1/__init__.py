"""Code generated from proto/ziggurat/v1 by scripts/gen-proto (do not edit)."""
