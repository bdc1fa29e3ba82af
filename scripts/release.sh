#!/usr/bin/env bash
# release.sh: build scalegate's release artifacts (docs/releasing.md).
#
#   scripts/release.sh VERSION [--out DIR] [--platforms "OS/ARCH ..."] [--allow-dirty]
#
# Writes DIR (default dist/vVERSION):
#   scalegate_VERSION_linux_amd64.tar.gz   the cgo build, every transport: bin/scalegate
#                                          linked against the system libenet, which is
#                                          copied into lib/ and found through the
#                                          binary's $ORIGIN/../lib run path, so the
#                                          tarball needs nothing installed but glibc
#   scalegate_VERSION_linux_amd64_static.tar.gz
#                                          the same platform built with CGO_ENABLED=0: no
#                                          libc at all (Alpine, distroless), no ENet
#   scalegate_VERSION_OS_ARCH.tar.gz       CGO_ENABLED=0 builds for the other platforms
#                                          (default linux/arm64 darwin/amd64 darwin/arm64):
#                                          every transport but ENet, which they refuse with
#                                          exit 2. Not windows: the launcher's staged stop
#                                          and no-orphan guarantee are POSIX process groups
#                                          and signals (internal/run/launcher), so it does not
#                                          compile there (docs/install.md)
#   SHA256SUMS                             sha256sum format, one line per tarball
# Every binary has the version and the commit stamped (-ldflags -X;
# `scalegate version` prints them).
#
# It must run on linux/amd64 with the build prerequisites (scripts/deps.sh
# installs them): Debian's libenet-dev ships no static library, so the
# amd64 build bundles the shared one instead. The glibc the tarball needs is
# the newest GLIBC_ symbol version the binary and libenet reference; the
# script prints it.
set -euo pipefail

usage() {
  echo "usage: scripts/release.sh VERSION [--out DIR] [--platforms \"OS/ARCH ...\"] [--allow-dirty]" >&2
  exit 2
}
fail() {
  echo "release: $*" >&2
  exit 1
}

[ $# -ge 1 ] || usage
version="${1#v}"
shift
out=""
platforms="linux/arm64 darwin/amd64 darwin/arm64"
allow_dirty=false
while [ $# -gt 0 ]; do
  case "$1" in
  --out) [ $# -ge 2 ] || usage; out="$2"; shift 2 ;;
  --platforms) [ $# -ge 2 ] || usage; platforms="$2"; shift 2 ;;
  --allow-dirty) allow_dirty=true; shift ;;
  *) usage ;;
  esac
done

# Semantic versions only: X.Y.Z, or X.Y.Z-PRERELEASE.
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || fail "version \"$version\" is not X.Y.Z or X.Y.Z-PRERELEASE"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/deps.sh
export PATH=/usr/local/go/bin:$PATH

[ "$(go env GOHOSTOS)/$(go env GOHOSTARCH)" = linux/amd64 ] ||
  fail "the linux/amd64 tarball links against this machine's libenet: run on linux/amd64"
for tool in readelf ldd sha256sum tar; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is required"
done

# A release is a commit: refuse uncommitted changes (--allow-dirty for a
# trial build, whose commit is then marked -dirty).
commit=$(git rev-parse HEAD 2>/dev/null) || fail "not a git checkout: the commit cannot be stamped"
if [ -n "$(git status --porcelain)" ]; then
  [ "$allow_dirty" = true ] || fail "the working tree has uncommitted changes (git status); commit them or pass --allow-dirty"
  commit="$commit-dirty"
fi
# A release (no pre-release suffix) has its CHANGELOG section.
if [[ "$version" != *-* ]] && ! grep -q "^## \[$version\]" CHANGELOG.md; then
  fail "CHANGELOG.md has no \"## [$version]\" section: move Unreleased there first"
fi

out="${out:-dist/v$version}"
[ ! -e "$out" ] || fail "$out exists: remove it or pass another --out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Artifacts are made in $work/dist and moved to $out only when all are
# there: a failed release leaves no partial directory behind.
stage="$work/dist"
mkdir -p "$stage"

pkg=github.com/scalegate/scalegate/internal/cli
stamp="-X $pkg.Version=$version -X $pkg.Commit=$commit"

# build OS ARCH CGO DIR [EXTRA_LDFLAGS]: one binary into DIR/bin.
build() {
  local goos=$1 goarch=$2 cgo=$3 dir=$4 extra=${5:-} exe=scalegate
  [ "$goos" != windows ] || exe=scalegate.exe
  mkdir -p "$dir/bin"
  echo "release: building $goos/$goarch (CGO_ENABLED=$cgo)" >&2
  CGO_ENABLED=$cgo GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=false \
    -ldflags "-s -w $stamp $extra" -o "$dir/bin/$exe" ./cmd/scalegate
}

# pack NAME: $stage/NAME.tar.gz from $work/NAME, its files owned by root.
pack() {
  tar -C "$work" --owner=0 --group=0 --numeric-owner --sort=name -czf "$stage/$1.tar.gz" "$1"
}

docs() { # docs DIR: what every tarball carries beside the binary.
  mkdir -p "$1/share/doc/scalegate"
  cp README.md CHANGELOG.md docs/install.md docs/compatibility.md "$1/share/doc/scalegate/"
}

# linux/amd64: cgo, libenet bundled.
name="scalegate_${version}_linux_amd64"
dir="$work/$name"
build linux amd64 1 "$dir" "-extldflags '-Wl,-rpath,\$ORIGIN/../lib'"
bin="$dir/bin/scalegate"
runpath=$(readelf -d "$bin" | sed -n 's/.*(\(RPATH\|RUNPATH\)).*\[\(.*\)\]/\2/p')
# shellcheck disable=SC2016 # $ORIGIN is the loader's, literal here
[ "$runpath" = '$ORIGIN/../lib' ] || fail "$bin: run path is \"$runpath\", want \$ORIGIN/../lib"
soname=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(libenet[^]]*\)\]/\1/p')
[ -n "$soname" ] || fail "$bin does not link libenet (was cgo off?)"
# The library this binary was linked against: what the loader resolves
# before it is copied (the run path points at a lib/ not yet there).
system_lib=$(ldd "$bin" | awk -v so="$soname" '$1 == so && $3 ~ /^\// {print $3}')
[ -n "$system_lib" ] || fail "ldd does not resolve $soname for $bin"
mkdir -p "$dir/lib"
cp -L "$system_lib" "$dir/lib/$soname"
chmod 0644 "$dir/lib/$soname"
# libenet is MIT-licensed: its notice travels with it.
for c in /usr/share/doc/libenet7/copyright /usr/share/doc/libenet-dev/copyright; do
  if [ -f "$c" ]; then cp "$c" "$dir/lib/$soname.copyright"; break; fi
done
[ -f "$dir/lib/$soname.copyright" ] || fail "libenet's copyright file is not in /usr/share/doc/libenet7"
# Resolved inside the tarball now, and nothing else needed but glibc.
resolved=$(ldd "$bin" | awk -v so="$soname" '$1 == so {print $3}')
[ "$(readlink -f "$resolved")" = "$(readlink -f "$dir/lib/$soname")" ] ||
  fail "ldd resolves $soname to $resolved, not the bundled $dir/lib/$soname"
glibc_only='^(libc\.so\.6|libpthread\.so\.0|libdl\.so\.2|libm\.so\.6|librt\.so\.1|libresolv\.so\.2|ld-linux-x86-64\.so\.2)$'
for lib in "$bin" "$dir/lib/$soname"; do
  while read -r needed; do
    [ "$needed" = "$soname" ] || [[ "$needed" =~ $glibc_only ]] ||
      fail "$(basename "$lib") needs $needed, which is neither glibc nor the bundled libenet"
  done < <(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done
glibc=$( (readelf -V "$bin"; readelf -V "$dir/lib/$soname") | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
docs "$dir"
"$bin" version >&2
pack "$name"
echo "release: $name.tar.gz: libenet $(basename "$(readlink -f "$system_lib")") bundled as lib/$soname; needs glibc ≥ ${glibc#GLIBC_}" >&2

# linux/amd64 without libc, then every other platform: CGO_ENABLED=0, no
# ENet.
for p in linux/amd64 $platforms; do
  goos=${p%/*} goarch=${p#*/}
  name="scalegate_${version}_${goos}_${goarch}"
  if [ "$p" = linux/amd64 ]; then
    [ -z "${static_amd64:-}" ] || fail "--platforms: linux/amd64 is built anyway (cgo, and _static)"
    static_amd64=1
    name="${name}_static"
  fi
  build "$goos" "$goarch" 0 "$work/$name"
  if [ "$goos/$goarch" = "$(go env GOHOSTOS)/$(go env GOHOSTARCH)" ]; then
    # Runnable here: make sure it is what it claims, static and without ENet.
    readelf -d "$work/$name/bin/scalegate" 2>/dev/null | grep -q NEEDED && fail "$name: the static build links shared libraries"
    speaks=$("$work/$name/bin/scalegate" version | sed -n 's/^transports=//p')
    [[ ",$speaks," == *,quic,* && ",$speaks," != *,enet,* ]] || fail "$name: the static build speaks \"$speaks\", want QUIC and no ENet"
  fi
  docs "$work/$name"
  pack "$name"
done

(cd "$stage" && sha256sum -- *.tar.gz >SHA256SUMS)
mkdir -p "$(dirname "$out")"
mv -T "$stage" "$out"
echo "release: $out:" >&2
(cd "$out" && ls -l -- *.tar.gz SHA256SUMS) >&2
