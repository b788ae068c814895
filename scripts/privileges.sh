# Sourced by scripts/demo and scripts/test: who builds, and what runs as root.
#
# A person runs the README's commands as themselves, like `make`: the build (swift, writing into the
# clone) runs as them with their PATH, so that everything it makes is theirs and their next `make`
# works; only apt-get, the lab's network namespaces and its daemons run as root, through `sudo`,
# said before it asks. As root (a container, CI's .ci/run) everything runs as root without sudo.
# Started with sudo anyway (`sudo scripts/demo`, the habit of older READMEs) in the person's own
# clone, a script first goes back to the person who typed it ($SUDO_USER) with their login PATH
# (/etc/profile.d, ~/.profile: where swift.org's tarball and swiftly put swift), before anything is
# built.
#
#   priv_init "$@"        that return to $SUDO_USER (re-runs the script as them)
#   priv_find_swift       swift on PATH, else in swiftly's directory, else one sentence and exit 1
#   priv_reclaim          what an earlier run as root left in the clone (and its SwiftPM locks in
#                         /tmp) goes back to the person, so their swift and make can write there
#   priv_root CMD...      CMD as root (directly when root), with the E2E_*, LAB_*, NEARBY_* and
#                         UNIT_* variables passed through sudo's reset environment

PRIV_NAME=${0##*/}
PRIV_SELF=$PWD/scripts/$PRIV_NAME   # sourced from the clone's root, after the script's cd there
# The lab's daemons and tools (avahi-daemon, ip, useradd, nft) live in /usr/sbin and /sbin, which
# an ordinary user's PATH often lacks.
for _priv_dir in /usr/sbin /sbin; do
    case ":$PATH:" in *":$_priv_dir:"*) ;; *) PATH=$PATH:$_priv_dir ;; esac
done
unset _priv_dir

priv_init() {
    ((EUID == 0)) && [[ -n ${SUDO_USER:-} && $SUDO_USER != root ]] || return 0
    # Only into the person's own clone: a clone of root's (in /root, /opt) stays root's to build in.
    [[ $(stat -c %U .) == "$SUDO_USER" ]] || return 0
    local user=$SUDO_USER home path
    home=$(getent passwd "$user" | cut -d: -f6)
    # A login shell's PATH, as the person's terminal has it (a profile may print; nologin prints).
    path=$(runuser -l "$user" -c 'printf "\nNEARBY_LOGIN_PATH=%s\n" "$PATH"' </dev/null 2>/dev/null | sed -n 's/^NEARBY_LOGIN_PATH=//p' | tail -n 1)
    echo "$PRIV_NAME: started with sudo: going back to $user, who builds (sudo again only for apt-get, namespaces and daemons)" >&2
    exec runuser -u "$user" -- env -u SUDO_USER -u SUDO_UID -u SUDO_GID -u SUDO_COMMAND \
        HOME="$home" USER="$user" LOGNAME="$user" PATH="${path:-/usr/local/bin:/usr/bin:/bin}" "$PRIV_SELF" "$@"
}

priv_find_swift() {
    if ! command -v swift >/dev/null; then
        local dir=${SWIFTLY_BIN_DIR:-${SWIFTLY_HOME_DIR:-$HOME/.local/share/swiftly}/bin}
        if [[ -x $dir/swift ]]; then
            echo "$PRIV_NAME: swift is not on your PATH; using swiftly's, $dir/swift" >&2
            PATH=$dir:$PATH
        else
            # shellcheck disable=SC2016  # the install line, as the person types it
            echo "$PRIV_NAME: Swift 6 is not installed (no swift on your PATH nor in $dir): install it as yourself with swiftly, open a new shell and run this again:" \
                'curl -O https://download.swift.org/swiftly/linux/swiftly-$(uname -m).tar.gz && tar zxf swiftly-$(uname -m).tar.gz && ./swiftly init' >&2
            exit 1
        fi
    fi
    echo "$PRIV_NAME: $(swift --version 2>/dev/null | head -n 1) ($(command -v swift)), building as $(id -un)" >&2
}

priv_reclaim() {
    ((EUID != 0)) || return 0
    local found=() locks=() item
    for item in .build .build-release .swiftpm Package.resolved; do
        [[ -e $item && -n $(find "$item" ! -user "$EUID" -print -quit 2>/dev/null) ]] && found+=("$item")
    done
    # SwiftPM's lock of a scratch directory: /tmp/<its path, / as _>.lock (one made by root is in
    # the way of the person's build: "invalid access to …build-release.lock").
    for item in "${TMPDIR:-/tmp}/$(pwd | tr / _)"_*.lock; do
        [[ -e $item && ! -O $item ]] && locks+=("$item")
    done
    ((${#found[@]} + ${#locks[@]})) || return 0
    echo "$PRIV_NAME: ${found[*]}${found[*]:+ }${locks[*]} belong to another user (an earlier run with sudo): sudo gives them back to you" >&2
    ((${#found[@]} == 0)) || sudo -- chown -R "$(id -u):$(id -g)" -- "${found[@]}" || exit 1
    ((${#locks[@]} == 0)) || sudo -- rm -f -- "${locks[@]}" || exit 1
}

priv_root() {
    if ((EUID == 0)); then "$@"; return; fi
    command -v sudo >/dev/null || {
        echo "$PRIV_NAME: needs root for apt-get, network namespaces and their daemons, and sudo is not installed: as root, apt-get install sudo && adduser $(id -un) sudo (or run this as root)" >&2
        exit 1
    }
    local pass=() name
    for name in $(compgen -e); do
        [[ $name =~ ^(E2E_|LAB_|NEARBY_|UNIT_) ]] && pass+=("$name=${!name}")
    done
    sudo -- env "${pass[@]}" "$@"
}
