#!/usr/bin/env bash
# Builds and installs the fake camera, a libv4l2 plugin (Tests/V4L2Plugin) that lets the tests run
# the production libv4l2 path against device files in a temporary directory.
#
#   Scripts/v4l2-plugin.sh build            compile it to .build/v4l2-plugin/
#   Scripts/v4l2-plugin.sh install          copy it into libv4l2's plugin directory (root)
#   Scripts/v4l2-plugin.sh uninstall        remove it from there
#   Scripts/v4l2-plugin.sh run -- CMD...    build it and run CMD with it installed, then remove it:
#       in a private mount namespace when possible (the plugin directory is covered by a bind mount
#       of a copy that adds our plugin, so nothing on the machine changes), otherwise, as root, by
#       copying it in and removing it on exit. Where neither works CMD runs without it and
#       VIEWFINDER_FAKE_CAMERA_SKIPPED says why (the plugin tests then report themselves skipped).
#       VIEWFINDER_FAKE_CAMERA_NO_NAMESPACE=1 skips the namespace (to try the copying fallback).
#
# libv4l2 loads every *.so in the directory fixed at its build time (Debian: the multiarch
# libv4l/plugins), in name order; ours sorts before libv4l-mplane.so so it answers first. It only
# accepts regular files starting with "VIEWFINDER-FAKE-CAMERA 1", so real cameras are unaffected.
set -euo pipefail
cd "$(dirname "$0")/.."

name=libv4l-00-viewfinder-fake-camera.so
source_file=Tests/V4L2Plugin/viewfinder_fake_camera.c
build_dir=.build/v4l2-plugin
built="$build_dir/$name"

plugin_dir() {
    local dir
    dir=$(dpkg -L libv4l-0 2>/dev/null | grep -m1 '/libv4l/plugins$' || true)
    if [ -z "$dir" ]; then
        local arch
        arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$(uname -m)-linux-gnu")
        dir="/usr/lib/$arch/libv4l/plugins"
    fi
    echo "$dir"
}

build() {
    local cc="${CC:-}"
    if [ -z "$cc" ]; then
        for candidate in cc gcc clang; do
            if command -v "$candidate" >/dev/null 2>&1; then cc=$candidate; break; fi
        done
    fi
    [ -n "$cc" ] || { echo "v4l2-plugin: no C compiler found" >&2; return 1; }
    mkdir -p "$build_dir"
    if [ ! -f "$built" ] || [ "$source_file" -nt "$built" ]; then
        # -z nodelete: the plugin's table of shared device state outlives libv4l2's dlclose.
        "$cc" -std=gnu11 -O2 -g -Wall -Wextra -fPIC -shared -fvisibility=hidden -Wl,-z,nodelete \
            -o "$built.tmp" "$source_file" -lturbojpeg -lpthread -lm
        mv "$built.tmp" "$built"
    fi
}

install_plugin() {
    local dir
    dir=$(plugin_dir)
    mkdir -p "$dir"
    cp "$built" "$dir/$name.tmp" && mv "$dir/$name.tmp" "$dir/$name"
}

uninstall_plugin() {
    rm -f "$(plugin_dir)/$name"
}

# Makes a copy of the plugin directory plus our plugin; prints its path.
stage_plugins() {
    local stage
    stage=$(mktemp -d "${TMPDIR:-/tmp}/viewfinder-v4l2-plugins.XXXXXX")
    cp -p "$(plugin_dir)"/*.so "$stage"/ 2>/dev/null || true
    cp "$built" "$stage/$name"
    chmod 755 "$stage"
    echo "$stage"
}

# The unshare flags that give a private mount namespace here (empty when none does).
namespace_flags() {
    [ -z "${VIEWFINDER_FAKE_CAMERA_NO_NAMESPACE:-}" ] || return 0
    local flags=(-m --propagation private)
    [ "$(id -u)" -eq 0 ] || flags=(-r "${flags[@]}")
    [ -d "$(plugin_dir)" ] || return 0
    if unshare "${flags[@]}" sh -c 'mount --bind "$1" "$1"' sh "$(plugin_dir)" 2>/dev/null; then
        echo "${flags[*]}"
    fi
}

run() {
    [ "${1:-}" = "--" ] && shift
    [ $# -gt 0 ] || { echo "usage: $0 run -- COMMAND..." >&2; return 1; }
    if ! build; then
        VIEWFINDER_FAKE_CAMERA_SKIPPED="the plugin could not be built (no C compiler or no libv4l-dev)" "$@"
        return
    fi
    local status=0 flags
    flags=$(namespace_flags)
    if [ -n "$flags" ]; then
        local stage
        stage=$(stage_plugins)
        # shellcheck disable=SC2086 # the flags are words
        VIEWFINDER_FAKE_CAMERA=namespace unshare $flags \
            sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$stage" "$(plugin_dir)" "$@" || status=$?
        rm -rf "$stage"
        return $status
    fi
    if [ "$(id -u)" -eq 0 ]; then
        if [ -e "$(plugin_dir)/$name" ]; then
            # Installed by hand earlier: leave it there.
            VIEWFINDER_FAKE_CAMERA=installed "$@"
            return
        fi
        install_plugin
        trap uninstall_plugin EXIT
        status=0
        VIEWFINDER_FAKE_CAMERA=copied "$@" || status=$?
        uninstall_plugin
        trap - EXIT
        return $status
    fi
    echo "v4l2-plugin: not root and no mount namespace: the fake-camera tests will be skipped" >&2
    VIEWFINDER_FAKE_CAMERA_SKIPPED="not root and no private mount namespace (unshare -m / unshare -r -m refused), so the plugin could not be installed into $(plugin_dir)" "$@"
}

case "${1:-}" in
    build) build && echo "$built" ;;
    install) build && install_plugin && echo "installed $(plugin_dir)/$name" ;;
    uninstall) uninstall_plugin ;;
    dir) plugin_dir ;;
    run) shift; run "$@" ;;
    *)
        echo "usage: $0 build | install | uninstall | dir | run -- COMMAND..." >&2
        exit 1
        ;;
esac
