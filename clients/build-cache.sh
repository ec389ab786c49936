# The build cache of the starter bots' launchers (clients/*/random-bot) and of the web client's
# node_modules (clients/web/test.sh), sourced by each after it has set `cache` (its directory:
# ${ZIGGURAT_BUILD_CACHE:-~/.cache/ziggurat/builds}/LANGUAGE) and `launcher` (its name, for
# messages). Each keys its entries by a hash of exactly what its build reads; what is shared here
# is how an entry is made, kept and put in place.
# shellcheck shell=bash

# The cache: an entry appears by one rename of a finished build, so it is whole or absent, never
# partial, whatever else runs at the time; its file `key` marks it complete (a directory
# without one did not come from here: it is never used, and is replaced).
cached() { [ -f "$1/key" ]; }
discard() { # a rename first: nobody sees it half-deleted
  local gone
  gone=$(mktemp -d "$cache/.gone.XXXXXX")
  mv -T "$1" "$gone/entry" 2>/dev/null || true
  rm -rf "$gone"
}
# store NEW ENTRY: NEW (a finished build in the cache) becomes ENTRY. Two builds of one KEY may
# race: the first rename wins, the other build is dropped (it is the same). The cache then keeps
# the four entries of that kind used last (each use touches its entry) and forgets what killed
# builds left behind for a day.
store() {
  local old
  echo "${2##*-}" > "$1/key"
  if [ -e "$2" ] && ! cached "$2"; then discard "$2"; fi
  mv -T "$1" "$2" 2>/dev/null || rm -rf "$1"
  trap - EXIT
  cached "$2" || { echo "$launcher: could not store $2" >&2; exit 1; }
  # shellcheck disable=SC2012 # ls -t: the names are ours (hex keys)
  while IFS= read -r old; do discard "$old"; done < <(ls -1dt "${2%-*}"-* | tail -n +5)
  find "$cache" -maxdepth 1 \( -name '.new.*' -o -name '.gone.*' \) -mmin +1440 \
    -exec rm -rf {} + 2>/dev/null || true
}
# new_entry: $new, a new directory in the cache to build in (removed if the build fails).
new_entry() {
  mkdir -p "$cache"
  new=$(mktemp -d "$cache/.new.XXXXXX")
  trap 'rm -rf "$new"' EXIT
}
# put_in_place NEW NAME: NEW replaces NAME by renames (never a mix of the old and the new).
put_in_place() {
  if [ -e "$2" ]; then
    rm -rf "$2.old.$$"
    mv -T "$2" "$2.old.$$"
    mv -T "$1" "$2"
    rm -rf "$2.old.$$"
  else
    mv -T "$1" "$2"
  fi
}
