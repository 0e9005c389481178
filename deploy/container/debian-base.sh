#!/bin/sh
# A base image for deploy/container/Containerfile where no image registry is reachable: a Debian root file system
# with only what the worker image needs (python3 with venv, CA certificates, useradd), made by mmdebstrap from
# Debian's packages and imported into podman.
#
#   deploy/container/debian-base.sh localhost/headwater-base [TARBALL]
#   podman build --format docker --build-arg BASE_IMAGE=localhost/headwater-base -t headwater-worker deploy/container
#
# Needs mmdebstrap and podman (apt-get install mmdebstrap podman), as root. TARBALL, when given, keeps the root
# file system: imported as it is when it exists, made there when it does not. DEBIAN_SUITE picks the release
# (bookworm, whose python3 is 3.11).
set -eu
image=${1:?usage: debian-base.sh IMAGE [TARBALL]}
tarball=${2:-}
suite=${DEBIAN_SUITE:-bookworm}
keep=yes
if [ -z "$tarball" ]; then
    keep=no
    tarball=$(mktemp --suffix=.tar)
    rm -f "$tarball"
fi
if [ ! -s "$tarball" ]; then
    mkdir -p "$(dirname "$tarball")"
    partial="$tarball.partial"
    rm -f "$partial"
    mmdebstrap --variant=essential --format=tar \
        --include=python3,python3-venv,ca-certificates,passwd \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        "$suite" "$partial"
    mv "$partial" "$tarball"
fi
podman import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' "$tarball" "$image"
if [ "$keep" = no ]; then
    rm -f "$tarball"
fi
