# tray @VERSION@ for zsh: in ~/.zshrc, eval "$(tray init zsh)"
# Wrapped commands run under `tray run`; a command typed at the prompt that runs longer
# than @DONE_AFTER@ is recorded as a finished session when it ends.

typeset -ga __tray_program __tray_ignore __tray_stopped
__tray_program=(@PROGRAM@)
__tray_ignore=(@IGNORE@)
__tray_stopped=(@STOPPED@)
typeset -g __tray_threshold=@THRESHOLD_S@

function __tray_available {
    emulate -L zsh
    [[ -x $__tray_program[1] ]] || (( $+commands[tray] ))
}

function __tray_run {
    emulate -L zsh
    # The tray that printed this code; a tray on PATH once that one is gone.
    if [[ -x $__tray_program[1] ]]; then
        "${__tray_program[@]}" "$@"
    else
        command tray "$@"
    fi
}

function __tray_in_session {
    # A tmux pane or a terminal started from a `tray run` inherits its TRAY_SESSION_ID:
    # that session is ours only when its terminal is this one.
    [[ -n ${TRAY_SESSION_ID-} && -n ${TRAY_TTY-} && $TRAY_TTY == "$TTY" ]]
}

function __tray_wrap {
    emulate -L zsh
    # Pipes, scripts and a command missing from PATH behave exactly as without tray.
    if [[ -o interactive && -t 0 && -t 1 ]] && (( $+commands[$1] )) && __tray_available \
        && ! __tray_in_session; then
        typeset -g __tray_wrapped=1
        __tray_run run -- "$@"
    else
        command "$@"
    fi
}

function __tray_warn {
    emulate -L zsh
    typeset -ga __tray_warned
    (( ${__tray_warned[(Ie)$1]} )) && return
    __tray_warned+=("$1")
    print -ru2 -- "tray: not wrapping $1: it is $2 (have it run 'tray run -- $1' for a session)"
}

function __tray_define {
    emulate -L zsh
    local name
    for name in "$@"; do
        if (( $+aliases[$name] )); then
            __tray_warn "$name" "an alias"
        elif (( $+functions[$name] )) && [[ $functions[$name] != "__tray_wrap $name "* ]]; then
            __tray_warn "$name" "a function"
        else
            # Functions, not aliases: completion for the name stays the command's own.
            functions[$name]="__tray_wrap $name \"\$@\""
        fi
    done
}

__tray_define @WRAP@

function __tray_preexec {
    typeset -g __tray_t0=$EPOCHREALTIME __tray_line=${1:-$3}
}

function __tray_precmd {
    local s=$?
    emulate -L zsh
    if [[ -n ${__tray_t0-} ]]; then
        local now=$EPOCHREALTIME
        local d=$(( now - __tray_t0 ))
        if (( d > __tray_threshold )) && [[ -z ${__tray_wrapped-} ]] \
            && (( ! ${__tray_stopped[(Ie)$s]} )) && ! __tray_in_session; then
            __tray_report $s $d $now
        fi
    fi
    unset __tray_t0 __tray_wrapped
}

function __tray_report {
    emulate -L zsh
    local line=$__tray_line
    local -a words
    words=(${(z)line})
    while [[ $words[1] == [A-Za-z_]*=* ]]; do
        shift words
    done
    (( $#words )) || return
    (( ${__tray_ignore[(Ie)${${(Q)words[1]}:t}]} )) && return
    # &!: in the background and disowned, so no job messages and no waiting.
    __tray_run _finished "--cmdline=$line" "--status=$1" "--duration=$2" "--end=$3" \
        "--cwd=$PWD" "--pid=$$" "--tty=$TTY" </dev/null >/dev/null 2>&1 &!
}

# The start time from zsh/datetime's $EPOCHREALTIME: no process started at any prompt.
if zmodload zsh/datetime 2>/dev/null && autoload -Uz add-zsh-hook; then
    add-zsh-hook preexec __tray_preexec
    add-zsh-hook precmd __tray_precmd
fi

# `tray doctor` reads this to tell whether the shell it runs in has the integration.
export TRAY_SHELL_INIT=zsh
