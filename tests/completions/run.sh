#!/usr/bin/env bash
# Shell completion as users get it. Each shell loads completions/ the way an installed copy is
# loaded (bash: bash-completion's loader; zsh: fpath + compinit; fish: fish_complete_path) and is
# asked what TAB offers after a command line: subcommands, options, and the recent peers of
# $NEARBY_HOME/recent-peers.json — including one whose name is a shell command, which must come
# back as a word and never run. Completion must not create anything (no identity).
#
# NEARBY=path/to/nearby picks the binary (default: .build/debug/nearby, else .build-docs/debug/nearby);
# COMPLETIONS=dir the scripts (default: completions/). Needs bash-completion, zsh, fish, python3.
set -uo pipefail
cd "$(dirname "$0")/../.."
here=$PWD/tests/completions
completions=$(realpath "${COMPLETIONS:-completions}")
nearby=${NEARBY:-}
if [[ -z $nearby ]]; then
    for candidate in .build/debug/nearby .build-docs/debug/nearby; do
        [[ -x $candidate ]] && { nearby=$candidate; break; }
    done
fi
[[ -n $nearby && -x $nearby ]] || { echo "completions: no nearby binary (set NEARBY=…)" >&2; exit 2; }
for tool in bash zsh fish python3; do
    command -v "$tool" >/dev/null || { echo "completions: $tool is not installed (scripts/install-deps)" >&2; exit 2; }
done
[[ -r /usr/share/bash-completion/bash_completion ]] || { echo "completions: bash-completion is not installed" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/home" "$tmp/bash/completions" "$tmp/zsh" "$tmp/fish"
ln -s "$(realpath "$nearby")" "$tmp/bin/nearby"   # the scripts run `nearby ---completion …` from PATH
cp "$completions/nearby.bash" "$tmp/bash/completions/nearby"
cp "$completions/_nearby" "$tmp/zsh/_nearby"
cp "$completions/nearby.fish" "$tmp/fish/nearby.fish"
export PATH="$tmp/bin:$PATH" NEARBY_HOME="$tmp/home" HOME="$tmp" NO_COLOR=1
unset NEARBY_SERVICE XDG_CONFIG_HOME

evil="\$(touch $tmp/pwned)"
cat >"$NEARBY_HOME/recent-peers.json" <<JSON
{"peers":[
{"id":"09okw9tg08ewk","last_seen":"2026-11-21T21:32:27Z","name":"Bob's Pi","service":"nearby"},
{"id":"1x2y3z4w5v6u7","last_seen":"2026-11-21T21:32:26Z","name":"$evil","service":"nearby"},
{"id":"7q7q7q7q7q7q7","last_seen":"2026-11-21T21:32:25Z","name":"Chat Box","service":"chat"}
],"version":1}
JSON

passed=0 failed=0
# check SHELL LINE OFFERED [EXPECTED...] [!UNEXPECTED...]: OFFERED is one word per line.
check() {
    local shell=$1 line=$2 offered=$3 word ok=true
    shift 3
    for word in "$@"; do
        if [[ $word == '!'* ]]; then
            grep -qxF -- "${word#!}" <<<"$offered" && ok=false
        else
            grep -qxF -- "$word" <<<"$offered" || ok=false
        fi
    done
    if $ok; then
        passed=$((passed + 1)); echo "ok    $shell: '$line<TAB>'"
    else
        failed=$((failed + 1)); echo "FAIL  $shell: '$line<TAB>' should offer: $* — it offered:"; sed 's/^/        /' <<<"$offered"
    fi
}

# bash: bash-completion's loader finds the script by command name, then the completion function runs
# with COMP_* set as readline sets them.
bash_complete() {
    BASH_COMPLETION_USER_DIR="$tmp/bash" bash --norc --noprofile -c '
        source /usr/share/bash-completion/bash_completion
        __load_completion nearby || exit 3
        COMP_LINE=$1 COMP_POINT=${#1}
        read -ra COMP_WORDS <<<"$1"
        [[ $1 == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        function=$(complete -p nearby | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
        "$function" nearby "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}"' bash "$1"
}
zsh_complete() { zsh -f "$here/zsh-complete.zsh" "$tmp/zsh" "$1"; }
fish_complete() { fish --no-config --private -c 'set -p fish_complete_path $argv[1]; complete -C $argv[2]' "$tmp/fish" "$1" | cut -f1; }
# fish 3 runs custom completions only in its line editor (see fish-tab.py): those press TAB in a pty.
fish_tab() {
    local line=$1 screen
    shift
    screen=$(python3 "$here/fish-tab.py" "$tmp/fish" "$line" "$@")
    # One word per line for check: each expected word that is on the screen.
    local word
    for word in "$@"; do grep -qF -- "$word" <<<"$screen" && printf '%s\n' "$word"; done
}

subcommands=(advertise browse invite accept send send-file stream disconnect identity)
browse_options=(--service --timeout --count --peer --now --verbose --help)

check bash "nearby " "$(bash_complete 'nearby ')" "${subcommands[@]}"
check bash "nearby browse --" "$(bash_complete 'nearby browse --')" "${browse_options[@]}"
check bash "nearby invite " "$(bash_complete 'nearby invite ')" "Bob's Pi" 09okw9tg08ewk "$evil" '!Chat Box'
check bash "nearby send-file Bo" "$(bash_complete 'nearby send-file Bo')" "Bob's Pi" '!09okw9tg08ewk'
check bash "nearby browse --peer " "$(bash_complete 'nearby browse --peer ')" "Bob's Pi" 09okw9tg08ewk
check bash "nearby invite --service chat " "$(bash_complete 'nearby invite --service chat ')" "Chat Box" '!Bob'"'"'s Pi'
# --service offers the service types of recent browses, and the default.
check bash "nearby send --service " "$(bash_complete 'nearby send --service ')" chat nearby
check bash "nearby browse --service c" "$(bash_complete 'nearby browse --service c')" chat '!nearby'

check zsh "nearby " "$(zsh_complete 'nearby ')" "${subcommands[@]}"
check zsh "nearby browse --" "$(zsh_complete 'nearby browse --')" "${browse_options[@]}"
# zsh lists the words as they will be inserted, quoted for the shell.
check zsh "nearby invite " "$(zsh_complete 'nearby invite ')" "Bob\\'s\\ Pi" 09okw9tg08ewk "\\$\\(touch\\ ${tmp// /\\ }/pwned\\)"
check zsh "nearby accept --from " "$(zsh_complete 'nearby accept --from ')" "Bob\\'s\\ Pi" 09okw9tg08ewk
check zsh "nearby stream --from Bo" "$(zsh_complete 'nearby stream --from Bo')" "Bob\\'s\\ Pi" '!09okw9tg08ewk'
check zsh "nearby advertise --service " "$(zsh_complete 'nearby advertise --service ')" chat nearby

check fish "nearby " "$(fish_complete 'nearby ')" "${subcommands[@]}"
check fish "nearby browse --" "$(fish_complete 'nearby browse --')" "${browse_options[@]}"
check fish "nearby invite " "$(fish_tab 'nearby invite ' "Bob's Pi" 09okw9tg08ewk "$evil")" "Bob's Pi" 09okw9tg08ewk "$evil"
check fish "nearby disconnect Bo" "$(fish_tab 'nearby disconnect Bo' "nearby disconnect Bob\\'s\\ Pi")" "nearby disconnect Bob\\'s\\ Pi"

# Nothing ran that should not have: no command from a peer's name, no identity, no other file.
if [[ ! -e $tmp/pwned && "$(ls -A "$NEARBY_HOME")" == recent-peers.json ]]; then
    passed=$((passed + 1)); echo "ok    completion ran no peer-supplied command and created no file"
else
    failed=$((failed + 1)); echo "FAIL  completion had side effects:"; ls -lA "$tmp" "$NEARBY_HOME" | sed 's/^/        /'
fi

echo "completions: $passed passed, $failed failed"
((failed == 0))
