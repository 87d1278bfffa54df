#!/usr/bin/env bash
# Makes the Debian 12 packages canhazgpu, k8shazgpu and k8shazgpu-node from
# the Release build (scripts/build.sh release ...), without a debian/ source
# tree or debhelper: `cmake --install` of each package's component, the files
# of packaging/PACKAGE, dependencies from dpkg-shlibdeps, then dpkg-deb.
#   scripts/package.sh [BUILD_DIR [OUT_DIR]]   # default build-release, BUILD_DIR/debs
# The version is the project's (CMakeLists.txt, `project(... VERSION ...)`),
# the one `--version` prints. Builds what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-release}
out=${2:-$build/debs}
packages=(canhazgpu k8shazgpu k8shazgpu-node)

version=$(scripts/project_version.sh)
arch=$(dpkg --print-architecture)
maintainer="canhazgpu developers <maintainers@canhazgpu.dev>"
# Reproducible: file times, the changelog's date and dpkg-deb's archive
# times come from the commit, not from the clock.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)

if [ "$build" = build-release ]; then
  scripts/build.sh release canhazgpu canhazgpu-web k8shazgpu k8shazgpu-node \
    canhazgpu_docs k8shazgpu_docs >&2
fi

# dpkg-shlibdeps wants a source tree's shape: debian/control, and the files
# under debian/PACKAGE.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debian" "$out"
printf 'Source: canhazgpu\n' >"$work/debian/control"

changelog() {  # PACKAGE -> a Debian changelog entry for this build
  printf '%s (%s) bookworm; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
    "$1" "$version" "$commit" "$maintainer" "$(date -R -u -d "@$SOURCE_DATE_EPOCH")"
}

for pkg in "${packages[@]}"; do
  root=$work/debian/$pkg
  DESTDIR=$root cmake --install "$build" --component "$pkg" --prefix /usr --strip >/dev/null
  doc=$root/usr/share/doc/$pkg
  install -D -m 0644 packaging/copyright "$doc/copyright"
  changelog "$pkg" | gzip -9n >"$doc/changelog.gz"
  if [ -d "$root/usr/share/man/man1" ]; then
    gzip -9n "$root"/usr/share/man/man1/*.1
  fi
  if [ "$pkg" = canhazgpu ]; then
    # chg and canhazgpu-web are canhazgpu: one page.
    ln -s canhazgpu.1.gz "$root/usr/share/man/man1/chg.1.gz"
    ln -s canhazgpu.1.gz "$root/usr/share/man/man1/canhazgpu-web.1.gz"
    install -D -m 0644 packaging/canhazgpu/canhazgpu-web.service \
      "$root/lib/systemd/system/canhazgpu-web.service"
    install -D -m 0644 packaging/canhazgpu/canhazgpu.tmpfiles \
      "$root/usr/lib/tmpfiles.d/canhazgpu.conf"
  fi
  install -d -m 0755 "$root/DEBIAN"
  for script in preinst postinst prerm postrm; do
    if [ -f "packaging/$pkg/$script" ]; then
      install -m 0755 "packaging/$pkg/$script" "$root/DEBIAN/$script"
    fi
  done

  binaries=()
  for f in "$root"/usr/bin/*; do [ -L "$f" ] || binaries+=("-e$f"); done
  depends=$(cd "$work" && dpkg-shlibdeps -O "${binaries[@]}" | sed -n 's/^shlibs:Depends=//p')
  size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  {
    sed -n '/^Description:/q;p' "packaging/$pkg/control"
    printf 'Version: %s\nArchitecture: %s\nMaintainer: %s\n' "$version" "$arch" "$maintainer"
    printf 'Installed-Size: %s\nDepends: %s\nHomepage: https://canhazgpu.dev/\n' "$size" "$depends"
    sed -n '/^Description:/,$p' "packaging/$pkg/control"
  } >"$root/DEBIAN/control"
  (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
    xargs -0 md5sum) >"$root/DEBIAN/md5sums"
  find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  deb=$out/${pkg}_${version}_${arch}.deb
  dpkg-deb --root-owner-group -Zgzip --build "$root" "$deb" >/dev/null
  echo "$deb"
done
