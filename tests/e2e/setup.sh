# The README's set-up commands as a person runs them (scripts/privileges.sh): as an ordinary user
# whose swift is only in swiftly's directory, not on PATH, with a `sudo` that records what it is
# asked (and does nothing: the user stays who they are) and a `swift` that makes what SwiftPM
# makes in a clone: .build-release/release/nearby, Package.resolved, and the scratch directory's
# lock in TMPDIR. Checks that the build runs as the user, that everything it made is theirs, that
# sudo is asked for exactly what is root's (giving back an earlier root run's leftovers, the lab),
# that their next `make` works, and that no swift at all is one sentence with the install line.
# Sourced by run.sh; the user is the lab's ($LAB_USER).
# shellcheck shell=bash

# setup_clone DIR: a clone of what the set-up commands read (scripts, Makefile, tests/lab), a
# stand-in package, the user's home with the stand-in swift in swiftly's directory, their TMPDIR,
# and the recording sudo; all the lab user's.
setup_clone() {
    local dir=$1
    mkdir -p "$dir/clone/Sources/nearby" "$dir/clone/tests" "$dir/home/.local/share/swiftly/bin" "$dir/tmp" "$dir/bin"
    cp -r "$ROOT/scripts" "$ROOT/Makefile" "$dir/clone/" && cp -r "$ROOT/tests/lab" "$dir/clone/tests/" || return 1
    echo '// swift-tools-version:6.0' >"$dir/clone/Package.swift"
    echo 'print("hello")' >"$dir/clone/Sources/nearby/main.swift"
    cat >"$dir/home/.local/share/swiftly/bin/swift" <<'SH'
#!/bin/sh
case $1 in --version) echo "Swift version 6.0 (stand-in)"; exit 0 ;; esac
scratch=.build
while [ $# -gt 0 ]; do [ "$1" = --scratch-path ] && scratch=$2; shift; done
lock="${TMPDIR:-/tmp}/$(pwd | tr / _)_$scratch.lock"
: >"$lock" || { echo "error: invalid access to $lock" >&2; exit 1; }
mkdir -p "$scratch/release" && printf '#!/bin/sh\n' >"$scratch/release/nearby" && chmod 755 "$scratch/release/nearby" && : >Package.resolved
SH
    printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s/sudo.log"\n' "$dir" >"$dir/bin/sudo"
    chmod 755 "$dir/home/.local/share/swiftly/bin/swift" "$dir/bin/sudo"
    chown -R "$LAB_USER:" "$dir/clone" "$dir/home" "$dir/tmp" "$dir/bin"
}
# as_person DIR CMD...: CMD as the lab's user with that home, TMPDIR and a PATH of /usr/bin:/bin and the recording sudo.
as_person() {
    local dir=$1; shift
    "$ROOT/tests/lab/as-user" env -i HOME="$dir/home" TMPDIR="$dir/tmp" PATH="$dir/bin:/usr/bin:/bin" E2E_JOBS=2 "$@"
}

test_setup_commands_build_as_the_person_and_give_back_what_root_left() {
    local dir=$OUT/person uid gid lock stray
    setup_clone "$dir" || { fail "could not make the clone"; return 1; }
    uid=$(id -u "$LAB_USER") gid=$(id -g "$LAB_USER")
    # What an earlier `sudo scripts/demo` left: a root-owned .build and its lock.
    install -d -m 0755 "$dir/clone/.build" && : >"$dir/clone/.build/root-file"
    lock="$dir/tmp/$(tr / _ <<<"$dir/clone")_.build.lock"
    : >"$lock" && chmod 0644 "$lock"

    as_person "$dir" "$dir/clone/scripts/demo" >"$OUT/demo.out" 2>"$OUT/demo.err"
    expect_eq $? 0 "scripts/demo as the person (with a sudo that does nothing)" || { cat "$OUT/demo.err" >&2; return 1; }
    grep -qF "swift is not on your PATH; using swiftly's, $dir/home/.local/share/swiftly/bin/swift" "$OUT/demo.err" &&
        grep -qF "building as $LAB_USER" "$OUT/demo.err" || { fail "the demo did not say it builds as $LAB_USER with swiftly's swift"; cat "$OUT/demo.err" >&2; return 1; }
    # sudo: the leftovers given back, then the lab (with the variables it needs); nothing else.
    printf -- '-- chown -R %s:%s -- .build\n-- rm -f -- %s\n-- env E2E_JOBS=2 %s --lab\n' "$uid" "$gid" "$lock" "$dir/clone/scripts/demo" >"$OUT/sudo.want"
    diff "$OUT/sudo.want" "$dir/sudo.log" >&2 || { fail "sudo was asked for other things than the leftovers and the lab (< wanted, > asked)"; return 1; }
    # What the build made is the person's, in the clone and in TMPDIR (but what root left, which
    # the recording sudo did not give back).
    stray=$(find "$dir/clone" "$dir/tmp" ! -user "$LAB_USER" ! -path "$dir/clone/.build" ! -path "$dir/clone/.build/*" ! -path "$lock")
    [[ -z $stray ]] || { fail "root's after the demo: $stray"; return 1; }
    expect_eq "$(stat -c %U "$dir/clone/.build-release/release/nearby" 2>&1)" "$LAB_USER" "the owner of .build-release/release/nearby" || return 1
    # Their next make (a source changed: it builds again, taking the lock again), swift on their PATH.
    touch "$dir/clone/Sources/nearby/main.swift"
    (cd "$dir/clone" && as_person "$dir" env PATH="$dir/home/.local/share/swiftly/bin:/usr/bin:/bin" make) >"$OUT/make.out" 2>&1 ||
        { fail "the person's make after the demo failed"; cat "$OUT/make.out" >&2; return 1; }

    # scripts/test's build as the person too; sudo only for the end-to-end stage, with its names.
    : >"$dir/sudo.log"
    rm -rf "$dir/clone/.build" "$lock"
    as_person "$dir" env NEARBY_SKIP="unit docs completions" E2E_TESTS="one two" "$dir/clone/scripts/test" >"$OUT/test.out" 2>&1
    grep -qE '^-- env .*E2E_TESTS=one two.* tests/e2e/run.sh one two$' "$dir/sudo.log" ||
        { fail "scripts/test did not ask sudo for tests/e2e/run.sh one two"; cat "$dir/sudo.log" "$OUT/test.out" >&2; return 1; }
    stray=$(find "$dir/clone" "$dir/tmp" ! -user "$LAB_USER")
    [[ -z $stray ]] || { fail "root's after scripts/test: $stray"; return 1; }
}

test_setup_commands_without_swift_say_how_to_install_it() {
    local dir=$OUT/person lines
    setup_clone "$dir" || { fail "could not make the clone"; return 1; }
    rm -rf "$dir/home/.local"
    as_person "$dir" "$dir/clone/scripts/demo" >"$OUT/demo.out" 2>"$OUT/demo.err"
    expect_eq $? 1 "scripts/demo with no swift anywhere" || return 1
    lines=$(wc -l <"$OUT/demo.err")
    expect_eq "$lines" 1 "lines on stderr" || { cat "$OUT/demo.err" >&2; return 1; }
    grep -qF 'https://download.swift.org/swiftly/linux/swiftly-$(uname -m).tar.gz' "$OUT/demo.err" ||
        { fail "no install line"; cat "$OUT/demo.err" >&2; return 1; }
    [[ ! -s $dir/sudo.log ]] || { fail "sudo asked before swift was found"; cat "$dir/sudo.log" >&2; return 1; }
    # Started with sudo: back to the person who typed it ($SUDO_USER) before anything is built
    # (unless this machine has a swift on every PATH: then it would build the stand-in package).
    if PATH=/usr/local/bin:/usr/bin:/bin command -v swift >/dev/null; then
        echo "    (a swift on every PATH here: not checking sudo scripts/test by a person without one)"; return 0
    fi
    SUDO_USER=$LAB_USER "$dir/clone/scripts/test" >"$OUT/sudo-test.out" 2>&1
    expect_eq $? 1 "sudo scripts/test by a person without swift" || return 1
    grep -qF "started with sudo: going back to $LAB_USER" "$OUT/sudo-test.out" &&
        grep -qF "Swift 6 is not installed" "$OUT/sudo-test.out" || { fail "sudo scripts/test did not go back to $LAB_USER"; cat "$OUT/sudo-test.out" >&2; return 1; }
    [[ -z $(find "$dir/clone" -newer "$OUT/demo.err" ! -user "$LAB_USER") ]] || { fail "root made files in the clone"; return 1; }
}
