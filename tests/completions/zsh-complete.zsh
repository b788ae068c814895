#!/usr/bin/env zsh
# Prints, one per line, the words zsh's completion system offers for a command line, as if TAB was
# pressed at its end. Usage: zsh-complete.zsh FPATH_DIR 'nearby invite '
#
# zsh completes only inside the line editor, so this drives an interactive `zsh -f` in a pseudo-
# terminal (zpty) and replaces `compadd` there with one that prints what it would add — the approach
# of Valodim/zsh-capture-completion, cut down.
emulate -L zsh
zmodload zsh/zpty || { print -u2 'zsh-complete: no zsh/zpty'; exit 2 }
fpath_dir=$1 line=$2

setup=$(mktemp "${TMPDIR:-/tmp}/zsh-complete.XXXXXX") || exit 2
trap 'rm -f -- $setup $setup.dump; zpty -d capture 2>/dev/null' EXIT
cat >$setup <<SETUP
PROMPT= RPROMPT= PS2=
fpath=(${(q)fpath_dir} \$fpath)
autoload -Uz compinit && compinit -u -d ${(q)setup}.dump
zmodload zsh/zutil
bindkey '^I' complete-word
bindkey '^M' undefined-key
bindkey '^J' undefined-key
zstyle ':completion:*' list-grouped false
zstyle ':completion:*' insert-tab false
# A line holding only NUL before and after the matches marks where they are in the output.
marker() { print -n -- '\\0\\n' }
compprefuncs=(marker)
comppostfuncs=(marker exit)
compadd() {
    # Calls that only collect matches into an array (-O/-A/-D) are internal: let them be.
    if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd "\$@"; return; fi
    local -a __hits
    builtin compadd -A __hits "\$@"
    local hit
    for hit in \$__hits; do print -r -- "MATCH:\$hit"; done
}
print ready
SETUP

zpty capture zsh -f -i
zpty -w capture "source ${(q)setup}"
local out
# Up to 30 s, ending as soon as it is ready: compinit in a fresh shell took over 2 s (the old bound)
# on two loaded cores, and the first test failed with nothing offered.
repeat 300; do
    zpty -r -t capture out 2>/dev/null || sleep 0.1
    [[ $out == *ready* ]] && break
done
[[ $out == *ready* ]] || { print -u2 'zsh-complete: the shell did not start'; exit 2 }
zpty -w -n capture "$line"$'\t'
local all='' chunk
while zpty -r capture chunk; do all+=$chunk; done
for out in ${(f)all}; do
    [[ $out == MATCH:* ]] && print -r -- ${${out#MATCH:}%$'\r'}
done
exit 0
