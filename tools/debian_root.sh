#!/usr/bin/env bash
# A root filesystem of one Debian release, built from Debian's packages with
# mmdebstrap, for running torchferry under a CPython this machine does not
# have (./dev wheel, ./dev test pythons). Made once: a stamp records the
# release and the package list. A list that only grows is installed into the
# root with its own apt (keeping what was made inside it, such as a torch
# venv of several GB); any other change rebuilds the root. It is built
# beside its final place and moved there whole, so that an interrupted build
# never passes for a finished one.
#
#   tools/debian_root.sh SUITE DIR PACKAGE...
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: tools/debian_root.sh SUITE DIR PACKAGE..." >&2; exit 2; }
suite="$1" dir="$2"
shift 2
want="$suite ${*:-}"
if [ -f "$dir/.torchferry-stamp" ] && [ "$(cat "$dir/.torchferry-stamp")" = "$want" ]; then
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "tools/debian_root.sh builds as root (mmdebstrap's root mode, then chroot)" >&2; exit 1; }
if [ -f "$dir/.torchferry-stamp" ]; then
  read -r -a had <"$dir/.torchferry-stamp"
  missing=()
  for p in "$@"; do
    [[ " ${had[*]:1} " == *" $p "* ]] || missing+=("$p")
  done
  superset=1
  for p in "${had[@]:1}"; do
    [[ " $* " == *" $p "* ]] || superset=0
  done
  if [ "${had[0]}" = "$suite" ] && [ "$superset" = 1 ]; then
    echo "==> adding ${missing[*]} to $dir" >&2
    mount -t proc proc "$dir/proc"
    trap 'umount "$dir/proc"' EXIT
    chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      sh -c 'apt-get -q update -o Acquire::Check-Valid-Until=false -o Acquire::Retries=3 >/dev/null &&
        apt-get -q install -y --no-install-recommends "$@" >/dev/null && apt-get clean' sh "${missing[@]}"
    # A new file, moved into place: the stamp is whole or absent.
    echo "$want" > "$dir/.torchferry-stamp.tmp"
    mv "$dir/.torchferry-stamp.tmp" "$dir/.torchferry-stamp"
    exit 0
  fi
fi
command -v mmdebstrap >/dev/null || {
  echo "tools/debian_root.sh needs mmdebstrap (Debian package mmdebstrap)" >&2
  exit 1
}
mkdir -p "$(dirname "$dir")"
rm -rf "$dir.tmp"
include="$(IFS=,; echo "$*")"
# Documentation, manuals and translations are not needed to build or test.
# Check-Valid-Until off: a Release file past its Valid-Until date (a mirror
# that lags, or a clock ahead of it: unstable's is valid for a week) would
# stop the build; the archive's signatures are still checked.
mmdebstrap --quiet --variant=minbase ${include:+--include="$include"} \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --aptopt='Acquire::Retries "3"' \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  "$suite" "$dir.tmp" http://deb.debian.org/debian
echo "$want" > "$dir.tmp/.torchferry-stamp"
rm -rf "$dir"
mv "$dir.tmp" "$dir"
