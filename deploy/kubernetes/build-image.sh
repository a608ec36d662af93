#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The DaemonSet's image from this tree's Debian package: tools/deb.sh, then
# podman (or docker) build of deploy/kubernetes/Containerfile, tagged
# execguard:VERSION as execguard.yaml names it. Needs the base image
# (debian:bookworm-slim) from a registry or already pulled.
# Usage: deploy/kubernetes/build-image.sh [podman|docker]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tool=${1:-podman}
version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)
"$repo/tools/deb.sh"
deb=$(cd "$repo/build/deb" && ls "execguard_${version}_"*.deb | head -n 1)
"$tool" build -f "$repo/deploy/kubernetes/Containerfile" --build-arg DEB="$deb" -t "execguard:$version" "$repo"
echo "image execguard:$version"
