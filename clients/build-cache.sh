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
# current DIR KEY: DIR holds the output of KEY (its .ziggurat-key), whatever its files' mtimes.
current() { [ "$(cat "$1/.ziggurat-key" 2>/dev/null)" = "$2" ]; }
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

# node_modules, for the TypeScript launcher and the web client's tests: installed once per KEY into
# the cache, then hard-linked into place (0.1 s for 155 MB). The hard links share the cache's
# files, so node_modules is for reading: npm ci and npm install replace files rather than write
# into them, and the one file npm rewrites, .package-lock.json, is a copy. Whether ./node_modules
# is current is the KEY it holds in .ziggurat-key, not mtimes (every file of a fresh clone is new).
hash_files() { find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; }
npm_version() {
  # From npm's package.json: `npm --version` costs a third of a second.
  local cli package version=""
  cli=$(readlink -f "$(command -v npm)")
  package=$(dirname "$(dirname "$cli")")/package.json
  if [ "$(basename "$cli")" = npm-cli.js ] && [ -f "$package" ]; then
    version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$package")
  fi
  if [ -n "$version" ]; then echo "$version"; else npm --version; fi
}
# node_modules_key FILE...: the KEY of an npm ci of FILE... (package.json, the lock, .npmrc) with
# this node and npm on this platform.
node_modules_key() {
  {
    echo "npm ci --no-audit --no-fund"
    node --version
    npm_version
    uname -sm
    hash_files "$@"
  } | sha256sum | cut -c1-64
}
# node_modules_from_cache KEY CHECK FILE...: ./node_modules becomes the cache's node_modules-KEY,
# which npm ci makes first when it is missing, from copies of FILE...; CHECK (a command; `:` for
# none) runs after that install, before it is stored.
node_modules_from_cache() {
  local key=$1 check=$2 entry
  shift 2
  entry=$cache/node_modules-$key
  if ! cached "$entry"; then
    new_entry
    cp "$@" "$new/"
    (cd "$new" && npm ci --no-audit --no-fund --loglevel=error) >&2
    "$check"
    echo "$key" > "$new/node_modules/.ziggurat-key"
    store "$new" "$entry"
  fi
  touch -c "$entry"
  rm -rf "node_modules.new.$$"
  cp -al "$entry/node_modules" "node_modules.new.$$" 2>/dev/null ||
    { rm -rf "node_modules.new.$$"; cp -a "$entry/node_modules" "node_modules.new.$$"; }
  if [ -f "node_modules.new.$$/.package-lock.json" ]; then
    cp --remove-destination "$entry/node_modules/.package-lock.json" "node_modules.new.$$/"
  fi
  put_in_place "node_modules.new.$$" node_modules
}
