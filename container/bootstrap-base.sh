#!/usr/bin/env bash
# A stand-in for python:3.11-slim, bootstrapped from Debian's mirror with mmdebstrap, for machines that reach
# Debian but not Docker Hub (the development and CI machines). Prints the image's tag; build on it with
#   podman build --format docker --build-arg BASE_IMAGE="$(container/bootstrap-base.sh)" -t tau2-retail-green .
#
# What the Dockerfile relies on from its base, and how this one provides it: Debian bookworm with apt
# (the curl install), useradd/groupadd (passwd), Python 3.11 (bookworm's python3, 3.11.2) and `pip` on PATH
# installing into the system interpreter (Debian's python3-pip, with the EXTERNALLY-MANAGED marker removed, as
# python:3.11-slim has none), no apt lists and no downloaded .debs kept (as Docker's Debian images). The
# host's CA bundle replaces the base's, so that pip and apt reach PyPI through a TLS-re-signing proxy when the
# host trusts one (HOST_CA_BUNDLE, default /etc/ssl/certs/ca-certificates.crt).
#
# Cached: the image is tagged with a hash of this script, the mirrors and the CA bundle, and its root file
# system is kept as a tarball in $TAU2_CONTAINER_CACHE (default ~/.cache/tau2-green-agent), so a second run,
# or a CI run on the same machine, reuses it (a pruned image store is re-imported from the tarball in
# seconds). Only the newest recipe's tarball is kept; delete it and the image to pick up newer Debian
# packages. Nothing of it lives in the repository.
set -euo pipefail

HOST_CA_BUNDLE=${HOST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
CACHE_DIR=${TAU2_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tau2-green-agent}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
REPOSITORY=${TAU2_BASE_REPOSITORY:-localhost/tau2-green-base}
PACKAGES=python3,python3-pip,ca-certificates,passwd

key=$({ cat "$0" "$HOST_CA_BUNDLE"; echo "$MIRROR $SECURITY_MIRROR"; } | sha256sum | cut -c1-16)
tag=$REPOSITORY:bookworm-$key
tarball=$CACHE_DIR/base-bookworm-$key.tar

if podman image exists "$tag"; then
    echo "$tag"
    exit 0
fi
mkdir -p "$CACHE_DIR"
if [ ! -s "$tarball" ]; then
    echo "bootstrapping $tag with mmdebstrap (about a minute)" >&2
    partial=$(mktemp "$CACHE_DIR/.base-XXXXXX.tar")
    trap 'rm -f "$partial"' EXIT
    # apt-get as in Docker's Debian images: no recommends, no .debs kept after an install.
    # Merged /usr set up as debootstrap (and Docker's Debian images) do, not by the usrmerge package (which
    # would pull in 50 MB of perl).
    mmdebstrap --quiet --variant=minbase --include="$PACKAGES" --format=tar \
        --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
        --aptopt='APT::Install-Recommends "false"' \
        --customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED' \
        --customize-hook='printf "%s\n" "APT::Keep-Downloaded-Packages \"false\";" \
            "Dir::Cache::pkgcache \"\";" "Dir::Cache::srcpkgcache \"\";" > "$1"/etc/apt/apt.conf.d/90no-cache' \
        --customize-hook='rm -f "$1"/var/cache/apt/*.bin' \
        --customize-hook="upload $HOST_CA_BUNDLE /etc/ssl/certs/ca-certificates.crt" \
        bookworm "$partial" \
        "deb $MIRROR bookworm main" \
        "deb $MIRROR bookworm-updates main" \
        "deb $SECURITY_MIRROR bookworm-security main" >&2
    mv "$partial" "$tarball"
    trap - EXIT
    # One base is kept: the tarballs of earlier recipes go.
    find "$CACHE_DIR" -maxdepth 1 -name 'base-bookworm-*.tar' ! -path "$tarball" -delete
fi
podman import --quiet --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' "$tarball" "$tag" >/dev/null
# Bases of earlier recipes go too, once no image is built on them any more.
for old in $(podman images --format '{{.Repository}}:{{.Tag}}' "$REPOSITORY"); do
    [ "$old" = "$tag" ] || podman rmi "$old" >/dev/null 2>&1 || true
done
echo "$tag"
