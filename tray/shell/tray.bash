# tray @VERSION@ for bash: in ~/.bashrc, eval "$(tray init bash)"
# Wrapped commands run under `tray run`; a command typed at the prompt that runs longer
# than @DONE_AFTER@ is recorded as a finished session when it ends.

__tray_program=(@PROGRAM@)
__tray_threshold=@THRESHOLD_US@
__tray_ignore=@IGNORE@
__tray_stopped=@STOPPED@

__tray_available() {
    [[ -x ${__tray_program[0]} ]] || command -v tray >/dev/null 2>&1
}

__tray_run() {
    # The tray that printed this code; a tray on PATH once that one is gone.
    if [[ -x ${__tray_program[0]} ]]; then
        "${__tray_program[@]}" "$@"
    else
        command tray "$@"
    fi
}

__tray_in_session() {
    # A tmux pane or a terminal started from a `tray run` inherits its TRAY_SESSION_ID:
    # that session is ours only when its terminal is this one.
    [[ -n ${TRAY_SESSION_ID-} && -n ${TRAY_TTY-} ]] || return 1
    if [[ -z ${__tray_tty-} ]]; then
        local tty
        tty=$(tty 2>/dev/null) || return 1
        __tray_tty=$tty
    fi
    [[ $TRAY_TTY == "$__tray_tty" ]]
}

__tray_wrap() {
    # Pipes, scripts and a command missing from PATH behave exactly as without tray.
    if [[ $- == *i* && -t 0 && -t 1 ]] && type -P -- "$1" >/dev/null \
        && __tray_available && ! __tray_in_session; then
        __tray_wrapped=1
        __tray_run run -- "$@"
    else
        command "$@"
    fi
}

__tray_warn() {
    [[ " ${__tray_warned-} " == *" $1 "* ]] && return
    __tray_warned="${__tray_warned-} $1"
    printf "tray: not wrapping %s: it is %s (have it run 'tray run -- %s' for a session)\n" \
        "$1" "$2" "$1" >&2
}

__tray_define() {
    local name
    for name in "$@"; do
        if alias -- "$name" >/dev/null 2>&1; then
            __tray_warn "$name" "an alias"
        elif declare -F -- "$name" >/dev/null && [[ " ${__tray_defined-} " != *" $name "* ]]; then
            __tray_warn "$name" "a function"
        else
            # Functions, not aliases: completion for the name stays the command's own.
            eval "function $name { __tray_wrap $name \"\$@\"; }"
            [[ " ${__tray_defined-} " == *" $name "* ]] || __tray_defined="${__tray_defined-} $name"
        fi
    done
}

__tray_define @WRAP@

__tray_precmd() {
    # First, before anything changes them: the command's status and its last word.
    local __tray_s=$? __tray_l=$_
    if [[ -n ${__tray_t0-} ]]; then
        local __tray_now
        if [[ -n ${EPOCHREALTIME-} ]]; then
            __tray_now=${EPOCHREALTIME/[.,]/}
        else
            __tray_now=$((SECONDS * 1000000))
        fi
        if ((__tray_now - __tray_t0 > __tray_threshold)) && [[ -z ${__tray_wrapped-} ]] \
            && [[ $__tray_stopped != *" $__tray_s "* ]] && ! __tray_in_session; then
            # A subshell's background job: no job messages, and the prompt does not wait.
            (__tray_report "$__tray_s" "$((__tray_now - __tray_t0))" "$__tray_now" \
                "$__tray_l" "$((${HISTCMD:-0} != ${__tray_h:--1}))" 0<&0 >/dev/null 2>&1 &)
        fi
    fi
    unset __tray_t0 __tray_wrapped
    __tray_h=${HISTCMD-}
    return "$__tray_s"
}

__tray_report() {
    local status=$1 micros=$2 end=$3 last=$4 fresh=$5 line seconds ended=''
    local entry='^[[:space:]]*[0-9]+[*[:space:]][[:space:]](.*)$'
    local first='^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*[[:space:]]+)*([^[:space:];&|()<>]+)'
    line=$(HISTTIMEFORMAT='' builtin history 1) || return
    [[ $line =~ $entry ]] || return
    line=${BASH_REMATCH[1]}
    # No new history entry: ignoredups dropped a repeat, or the command was kept out of
    # the history (a leading space, HISTIGNORE). The last entry is this command only if
    # it ends with the word the shell just ran; a command we cannot name is not reported.
    if ((!fresh)) && [[ ${line##*[[:space:]]} != "$last" ]]; then
        return
    fi
    [[ $line =~ $first ]] || return
    [[ $__tray_ignore == *" ${BASH_REMATCH[2]##*/} "* ]] && return
    printf -v seconds '%d.%06d' $((micros / 1000000)) $((micros % 1000000))
    if [[ -n ${EPOCHREALTIME-} ]]; then
        printf -v ended -- '--end=%d.%06d' $((end / 1000000)) $((end % 1000000))
    fi
    __tray_run _finished "--cmdline=$line" "--status=$status" "--duration=$seconds" \
        ${ended:+"$ended"} "--cwd=$PWD" "--pid=$$"
}

# The start time comes from PS0 (bash 4.4 and later), with no process started: an
# arithmetic subscript that assigns and expands to nothing.
if ((BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4))) \
    && shopt -q promptvars; then
    if [[ -n ${EPOCHREALTIME-} ]]; then
        __tray_ps0='${__tray_none[__tray_t0=${EPOCHREALTIME/[.,]/}]-}'
    else
        __tray_ps0='${__tray_none[__tray_t0=SECONDS*1000000]-}'
    fi
    [[ ${PS0-} == *"$__tray_ps0"* ]] || PS0=${PS0-}$__tray_ps0
    # First in PROMPT_COMMAND, to see the command's $? and hand it on unchanged; an
    # array (bash 5.1 and later) stays an array.
    if [[ -n ${PROMPT_COMMAND+set} && ${PROMPT_COMMAND@a} == *a* ]] \
        && ((BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1))); then
        [[ " ${PROMPT_COMMAND[*]} " == *" __tray_precmd "* ]] \
            || PROMPT_COMMAND=(__tray_precmd "${PROMPT_COMMAND[@]}")
    elif [[ ${PROMPT_COMMAND-} != *__tray_precmd* ]]; then
        PROMPT_COMMAND="__tray_precmd${PROMPT_COMMAND:+$'\n'$PROMPT_COMMAND}"
    fi
fi

# `tray doctor` reads this to tell whether the shell it runs in has the integration.
export TRAY_SHELL_INIT=bash
