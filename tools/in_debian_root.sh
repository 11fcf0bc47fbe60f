#!/usr/bin/env bash
# Runs a command inside a root filesystem made by tools/debian_root.sh, with
# /proc, /dev and /sys from this machine, the checkout at /src and a folder
# of wheels at /wheels (read-only), and takes every mount down again on the
# way out, however the command ends.
#
#   tools/in_debian_root.sh ROOTFS CHECKOUT WHEELS CMD...
set -euo pipefail

[ $# -ge 4 ] || { echo "usage: tools/in_debian_root.sh ROOTFS CHECKOUT WHEELS CMD..." >&2; exit 2; }
rootfs="$(realpath "$1")" checkout="$(realpath "$2")" wheels="$(realpath "$3")"
shift 3
[ -f "$rootfs/.torchferry-stamp" ] || { echo "$rootfs is not a finished root filesystem (tools/debian_root.sh)" >&2; exit 1; }

mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[i]}" 2>/dev/null || umount -lR "${mounted[i]}" || echo "could not unmount ${mounted[i]}" >&2
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bind() {  # bind SOURCE TARGET [ro]
  mkdir -p "$2"
  mount --rbind "$1" "$2"
  mounted+=("$2")
  # Private below the root: unmounting it must not reach this machine's own
  # /dev or /sys.
  mount --make-rslave "$2"
  [ "${3:-}" != ro ] || mount -o remount,bind,ro "$2"
}

mkdir -p "$rootfs/proc"
mount -t proc proc "$rootfs/proc"
mounted+=("$rootfs/proc")
bind /dev "$rootfs/dev"
bind /sys "$rootfs/sys"
bind "$checkout" "$rootfs/src"
bind "$wheels" "$rootfs/wheels" ro

# ccache (where the root has it: meson finds it on PATH, build-aten through
# /usr/lib/ccache, tests/pythons/in_root.sh) keeps its objects inside the
# root, so that they live as long as the compiler that made them; keyed by
# paths relative to /src, where every checkout appears.
chroot "$rootfs" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
  PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
  CCACHE_DIR=/var/cache/torchferry-ccache CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=true \
  PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheels PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$@"
