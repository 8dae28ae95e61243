#!/usr/bin/env bash
# Installs the strata binary for the action, in two steps around an
# actions/cache step:
#
#   install.sh download  - use $STRATA_BIN when set; else fetch the prebuilt
#                          release asset strata-<target-triple>.tar.gz of
#                          $STRATA_VERSION and check it against
#                          <asset>.sha256. Writes `bin=` on success, else
#                          `source=true`, `cache-key=` and `cargo-root=` so
#                          the next steps can restore and build.
#   install.sh build     - `cargo install --locked --path $GITHUB_ACTION_PATH`
#                          into the (possibly restored) cargo root, unless the
#                          cache already holds the binary. Writes `bin=`.
#
# A checksum mismatch is an error, never a reason to build instead.
set -euo pipefail

out="${GITHUB_OUTPUT:-/dev/stdout}"
action_path="${GITHUB_ACTION_PATH:-$(cd "$(dirname "$0")/.." && pwd)}"
tmp_root="${RUNNER_TEMP:-${TMPDIR:-/tmp}}"

version="${STRATA_VERSION:-}"
if [ -z "$version" ]; then
  # The ref the workflow used the action at (`uses: org/strata@v1.2.0`).
  version="${STRATA_ACTION_REF:-${GITHUB_ACTION_REF:-}}"
fi
if [ -z "$version" ]; then
  version=source
fi

target_triple() {
  case "$(uname -s)/$(uname -m)" in
    Linux/x86_64 | Linux/amd64) echo x86_64-unknown-linux-gnu ;;
    Linux/aarch64 | Linux/arm64) echo aarch64-unknown-linux-gnu ;;
    Darwin/x86_64) echo x86_64-apple-darwin ;;
    Darwin/arm64 | Darwin/aarch64) echo aarch64-apple-darwin ;;
    *) echo "" ;;
  esac
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# Hash of the action's sources, so a cached build of a moved tag or branch
# is not reused.
source_hash() {
  (
    cd "$action_path"
    find Cargo.toml Cargo.lock src -type f 2>/dev/null | LC_ALL=C sort | while read -r f; do
      sha256_of "$f"
    done
  ) | if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi | cut -c1-16
}

want_source() {
  local why="$1"
  echo "strata: $why; building from source with cargo" >&2
  local root="$tmp_root/strata-cargo"
  {
    echo "source=true"
    echo "cargo-root=$root"
    echo "cache-key=strata-${RUNNER_OS:-$(uname -s)}-${RUNNER_ARCH:-$(uname -m)}-${version}-$(source_hash)"
  } >>"$out"
}

download() {
  if [ -n "${STRATA_BIN:-}" ]; then
    if [ ! -x "$STRATA_BIN" ]; then
      echo "::error title=strata action::STRATA_BIN=$STRATA_BIN is not an executable file"
      exit 2
    fi
    echo "bin=$STRATA_BIN" >>"$out"
    return
  fi
  if [ "$version" = source ]; then
    want_source "version is 'source'"
    return
  fi
  local triple
  triple="$(target_triple)"
  if [ -z "$triple" ]; then
    want_source "no prebuilt binary for $(uname -s)/$(uname -m)"
    return
  fi
  local asset="strata-$triple.tar.gz"
  local repo="${STRATA_ACTION_REPOSITORY:-${GITHUB_ACTION_REPOSITORY:-}}"
  if [ -z "$repo" ]; then
    repo="${GITHUB_REPOSITORY:-}"
  fi
  local base="${STRATA_RELEASE_URL:-${GITHUB_SERVER_URL:-https://github.com}/$repo/releases/download/$version}"
  local dir="$tmp_root/strata-$version-$triple"
  rm -rf "$dir"
  mkdir -p "$dir"
  if ! curl -fsSL --retry 3 -o "$dir/$asset" "$base/$asset" ||
    ! curl -fsSL --retry 3 -o "$dir/$asset.sha256" "$base/$asset.sha256"; then
    want_source "no release asset $asset for version $version"
    return
  fi
  local expected actual
  expected="$(cut -d' ' -f1 <"$dir/$asset.sha256" | tr -d '\r\n')"
  actual="$(sha256_of "$dir/$asset")"
  if [ "$expected" != "$actual" ]; then
    echo "::error title=strata action::$asset: sha256 is $actual but $asset.sha256 says $expected; not installing it"
    exit 2
  fi
  tar -xzf "$dir/$asset" -C "$dir"
  if [ ! -x "$dir/strata" ]; then
    echo "::error title=strata action::$asset holds no executable 'strata' at its root"
    exit 2
  fi
  echo "strata: installed $asset ($version, sha256 $actual)" >&2
  echo "bin=$dir/strata" >>"$out"
}

build() {
  local root="${STRATA_CARGO_ROOT:?STRATA_CARGO_ROOT is not set}"
  if [ ! -x "$root/bin/strata" ]; then
    cargo install --locked --root "$root" --path "$action_path"
  else
    echo "strata: using the cached build in $root" >&2
  fi
  echo "bin=$root/bin/strata" >>"$out"
}

case "${1:-}" in
  download) download ;;
  build) build ;;
  *)
    echo "usage: install.sh download|build" >&2
    exit 2
    ;;
esac
