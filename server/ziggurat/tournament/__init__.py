"""Tournament bookkeeping: pure computation of ratings and match statistics, no I/O."""
