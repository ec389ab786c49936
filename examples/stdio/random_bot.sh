#!/bin/sh
# A random bot for ziggurat's stdio protocol, version 1 (docs/stdio-protocol.md).
#
# Run it with:  ziggurat bridge --server HOST:PORT --match ID --join me -- sh random_bot.sh
#
# The bridge writes one line at a time on stdin; the bot answers on stdout:
#   ziggurat 1                       -> answer "ready NAME"
#   game GAME SEATS SEAT [K=V ...]   the game, and which seat is ours
#   moves FIRST [MOVE ...]           moves played since our last move
#   position TEXT                    the position as our seat sees it
#   legal MOVE ...                   the legal moves
#   go PLY TIME_LEFT_MS              -> answer "move MOVE"
#   error REASON MESSAGE             our last answer was refused (a new "go" follows)
#   reveal TEXT / gameover TERMINATION RANK...    the end
#   quit                             -> exit
# Anything written to stderr is logged by the bridge, never parsed.

set -f  # positions contain '?': never expand words as file names

while IFS= read -r line; do
    set -- $line
    command=$1
    shift
    case $command in
        ziggurat) echo "ready random-sh" ;;
        legal) legal=$* ;;
        go)
            set -- $legal
            pick=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
            eval "move=\${$((pick % $# + 1))}"
            echo "move $move"
            ;;
        error) echo "refused: $*" >&2 ;;
        gameover) echo "game over: $*" >&2 ;;
        quit) exit 0 ;;
    esac
done
