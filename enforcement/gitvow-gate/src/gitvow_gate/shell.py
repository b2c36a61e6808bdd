"""Reading a shell command line the way the shell would, without running one.

A rule about ``git push`` must fire for ``cd x && sudo -E git -C y push``, for
``bash -c 'git push'`` and for ``FOO=1 timeout 30 git push``, and must not fire for
``gh issue create --body "never git push"``. So the line is split into simple commands
(``;``, ``&&``, ``||``, ``|``, ``&``, subshells, newlines; heredoc bodies dropped), each
command's wrappers are stepped over to the program that actually runs, and ``sh -c``
arguments are read as command lines of their own. What a line defines to run later is read
as if it ran: function bodies (``f() { …; }``, ``function f { …; }``), ``coproc``, aliases.
Programs that run another command from their arguments are followed into it: wrappers
(``env -S'…'`` split as ``env`` splits it, options clustered or with attached values),
``find -exec``/``-execdir``/``-ok``/``-okdir`` (and ``fd --exec``), ``watch``, ``flock``,
``su``/``runuser -c``, ``script -c`` (also clustered: ``script -qc``), GNU ``parallel``.

What cannot be read is said so: a line with an unbalanced quote yields ``None`` (callers
fall back to matching the whole text, which fails toward asking), and a program position
holding ``eval``, a variable or a command substitution is reported as *indirect*.
"""

from __future__ import annotations

import os
import re
import shlex

from gitvow.frozen import dataclass

#: Words that run the rest of the line as a command. Options to them are stepped over too.
WRAPPERS = frozenset({"sudo", "doas", "env", "time", "nohup", "exec", "command", "nice", "xargs", "builtin", "stdbuf",
                      "busybox", "setsid", "ionice", "unbuffer", "chronic", "caffeinate"})
#: Shell reserved words that may stand before a command (``if rm …``, ``then rm …``, ``{ rm …; }``).
KEYWORDS = frozenset({"{", "}", "!", "if", "then", "else", "elif", "fi", "while", "until", "do", "done", "in", "esac",
                      "[[", "]]"})
#: Reserved words followed by a name before the command: ``function NAME { …; }`` (the body is
#: read as if it ran: the name may be called later in the line, or shadow a harmless one), and
#: ``coproc NAME { …; }``.
_NAMING_KEYWORDS = frozenset({"function", "coproc"})
#: Wrappers whose first non-option argument is theirs, not the program: ``timeout 30 cmd``.
WRAPPERS_WITH_ARGUMENT = frozenset({"timeout"})
#: Options of wrappers that take a separate value: ``sudo -u root``, ``nice -n 5``, ``xargs -I {}``.
_WRAPPER_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group", "--chdir"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir", "--split-string"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "xargs": frozenset({"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--max-args", "--max-procs", "--delimiter"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "exec": frozenset({"-a"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}),
}
#: ``find … -exec CMD ;`` and its kin: the words up to ``;`` or ``+`` are a command (fd's too).
_FIND_EXEC = {"find": frozenset({"-exec", "-execdir", "-ok", "-okdir"}),
              "fd": frozenset({"-x", "--exec", "-X", "--exec-batch"}),
              "fdfind": frozenset({"-x", "--exec", "-X", "--exec-batch"})}
#: Programs that run a command line given as one argument after an option: ``su -c 'CMD'``.
_LINE_OPTIONS: dict[str, frozenset[str]] = {
    "su": frozenset({"-c", "--command", "--session-command"}),
    "runuser": frozenset({"-c", "--command", "--session-command"}),
    "script": frozenset({"-c", "--command"}),
    "flock": frozenset({"-c", "--command"}),
}
#: Options of the programs below that take a separate value.
_RUNNER_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "watch": frozenset({"-n", "--interval", "-d", "-q", "--equexit"}),
    "flock": frozenset({"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"}),
    "parallel": frozenset({"-j", "--jobs", "-S", "--sshlogin", "-N", "-n", "--max-args", "-d", "--delimiter",
                           "-a", "--arg-file", "--joblog", "--results", "-I", "--timeout", "--delay"}),
}
#: Options of a shell that take a separate value, so ``bash -o pipefail -c CMD`` is still ``-c``.
_SHELL_VALUE_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
#: ``2>/dev/null``, ``>>log``, ``<in``, ``&>all``, ``2>&1``: redirections are not arguments.
_REDIRECTION = r"^(?:\d+|&)?(?:>>?|<<?|>&|<&|>\||<>)"
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "fish"})
# Written as strings and compiled only when a line needs them: the hook starts per tool call.
_HEREDOC = r"<<-?[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1[^\n]*\n.*?\n[ \t]*\2[ \t]*(?=\n|$)"
_ASCII_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _assignment(word: str) -> bool:
    """``NAME=value`` (a shell variable assignment before the program)."""
    name, eq, _ = word.partition("=")
    return bool(eq) and bool(name) and not name[0].isdigit() and set(name) <= _ASCII_WORD


def _variable(word: str) -> bool:
    """``$NAME``, ``${…}``, ``$1``, ``$@``… in program position."""
    return len(word) > 1 and word[0] == "$" and (word[1] in "{@*#?$!" or word[1] in _ASCII_WORD)
_OPERATOR_CHARS = frozenset(";&|()\n")
_MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class Command:
    """One simple command: the program that runs (a basename) and its arguments.

    ``argv`` is the command with wrappers removed, program first as written, so an adapter
    that wants the full path still has it. ``indirect`` names why the program cannot be read
    (``eval``, ``$CMD``), in which case ``program`` is what stood in its place.
    """

    program: str
    args: tuple[str, ...]
    argv: tuple[str, ...]
    indirect: str = ""
    #: The wrappers stepped over to reach the program (``xargs`` means its arguments come from
    #: standard input too).
    via: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        return " ".join(self.argv)


def strip_heredocs(text: str) -> str:
    """The line without heredoc bodies: they are data for a program, not commands."""
    return re.sub(_HEREDOC, "", text, flags=re.S) if "<<" in text else text


def tokenize(text: str) -> list[list[str]] | None:
    """Each simple command of ``text`` as its words, quotes resolved; None if it cannot be tokenised."""
    lexer = shlex.shlex(strip_heredocs(text), posix=True, punctuation_chars=";&|()\n")
    lexer.whitespace_split = True
    lexer.whitespace = " \t\r"  # an unquoted newline separates commands, as ';' does
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    segments: list[list[str]] = []
    current: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token and set(token) <= _OPERATOR_CHARS:
            # `2>&1`, `>&2`, `&>file`, `|&`: the '&' belongs to a redirection, not a separator
            before = current[-1] if current else ""
            after = tokens[i + 1] if i + 1 < len(tokens) else ""
            if token == "&" and before.endswith((">", "<")) and after:
                current[-1] = before + "&" + after
                i += 2
                continue
            if token == "&" and after.startswith(">") and current:
                i += 1
                continue  # `&>file` is `>file` for both streams
            if token == ";" and after.startswith("-") and current:
                # `find . -exec a \; -exec b \;`: the lexer gives a quoted or escaped ';' as it gives
                # the operator, and no command starts with an option: it is an argument
                current.append(token)
                i += 1
                continue
            if current:
                segments.append(current)
            current = []
        else:
            current.append(token)
        i += 1
    if current:
        segments.append(current)
    return segments


def _redirection(word: str) -> tuple[bool, bool]:
    """Whether ``word`` is a redirection, and whether its target is the next word (``> file``).

    What ``re.match(_REDIRECTION, word)`` answers, read by hand so that no regex is compiled
    on every hook call: an optional file descriptor (decimal digits, as ``\\d``) or ``&``,
    then ``>`` or ``<``, doubled or not (the pattern's first alternatives, ``>>?`` and
    ``<<?``, already match the start of ``>&``, ``<&``, ``>|`` and ``<>``).
    """
    i = 1 if word.startswith("&") else 0
    if not i:
        while i < len(word) and word[i].isdecimal():
            i += 1
    if i >= len(word) or word[i] not in "<>":
        return False, False
    end = i + 2 if word[i + 1:i + 2] == word[i] else i + 1
    return True, end == len(word)


def unwrap(words: list[str]) -> tuple[list[str], str, tuple[str, ...]]:
    """Step over ``VAR=x``, redirections, ``sudo -u x``, ``env -i``, ``timeout 30``, ``nohup``, ``xargs``…

    Returns the remaining argv (program first), when the program position cannot be read the
    reason why, and the wrappers stepped over.
    """
    words = _without_redirections(words)
    via: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if _assignment(word) or word in KEYWORDS:
            i += 1
            continue
        if word in _NAMING_KEYWORDS:
            i += 1
            # `function NAME …` always names; `coproc NAME { …; }` only before a compound command
            if i < len(words) and (word == "function" or (i + 1 < len(words) and words[i + 1] in ("{", "(", "[["))):
                i += 1
            continue
        base = os.path.basename(word)
        if base in WRAPPERS or base in WRAPPERS_WITH_ARGUMENT:
            via.append(base)
            stepped = _wrapper_options(base, words, i + 1)
            if isinstance(stepped, str):
                return words[i + 1:], stepped, tuple(via)
            words, i = stepped
            if base in WRAPPERS_WITH_ARGUMENT and i < len(words):
                i += 1  # the duration of `timeout 30`
            continue
        break
    rest = words[i:]
    if not rest:
        return [], "", tuple(via)
    program = rest[0]
    if _variable(program) or program.startswith(("$(", "`")) or program == "$":
        return rest, f"{program} (a variable or substitution in program position)", tuple(via)
    return rest, "", tuple(via)


def _wrapper_options(base: str, words: list[str], i: int) -> tuple[list[str], int] | str:
    """Step over a wrapper's options from ``words[i]``: the words (``env -S`` splices its split
    string in) and where the program starts; or why the line cannot be read."""
    takes_value = _WRAPPER_VALUE_OPTIONS.get(base, frozenset())
    while i < len(words) and (words[i].startswith("-") or (base == "env" and _assignment(words[i]))):
        option = words[i]
        i += 1
        if option == "--":
            break
        if option.startswith("--") or not option.startswith("-") or len(option) == 1:
            stepped = _long_option(base, option, words, i, takes_value)
        else:
            stepped = _short_cluster(base, option, words, i, takes_value)
        if stepped is None:
            return "env -S with a string the gate cannot split"
        words, i = stepped
    return words, i


def _long_option(base: str, option: str, words: list[str], i: int,
                 takes_value: frozenset[str]) -> tuple[list[str], int] | None:
    """``--split-string=…``, ``--user root``, or an option without a value."""
    name, eq, value = option.partition("=")
    if base == "env" and name == "--split-string":
        spliced = _env_split(words, i, value if eq else (words[i] if i < len(words) else ""), None if eq else i)
        return None if spliced is None else (spliced, i)
    if option in takes_value and i < len(words):
        i += 1
    return words, i


def _short_cluster(base: str, option: str, words: list[str], i: int,
                   takes_value: frozenset[str]) -> tuple[list[str], int] | None:
    """A cluster of short options: ``-iS'…'``, ``-uroot``, ``-n5``; a value-taking letter takes
    the rest of the cluster, or else the next word."""
    for at in range(1, len(option)):
        flag = "-" + option[at]
        if flag not in takes_value:
            continue
        attached = option[at + 1:]
        if base == "env" and flag == "-S":
            text = attached if attached else (words[i] if i < len(words) else "")
            spliced = _env_split(words, i, text, None if attached else i)
            return None if spliced is None else (spliced, i)
        if not attached and i < len(words):
            i += 1
        break
    return words, i


def _env_split(words: list[str], i: int, text: str, consumed: int | None) -> list[str] | None:
    """``env -S 'gh pr merge 1'``: the string split into words where the program goes (``consumed``:
    the index of the separate word that held it, now replaced)."""
    split = split_or_none(text)
    if split is None:
        return None
    tail = words[consumed + 1:] if consumed is not None else words[i:]
    return words[:i] + split + tail


def _without_redirections(words: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        redirect, separate = _redirection(word)
        if redirect:
            skip = separate
            continue
        out.append(word)
    return out


def split_or_none(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:
        return None


def commands(text: str, *, depth: int = 0) -> list[Command] | None:
    """Every simple command of a line, wrappers removed, ``sh -c`` and ``eval`` followed; None if unreadable.

    A body nested deeper than the gate reads (``sh -c "sh -c \"…\""`` five times) is unreadable.
    """
    segments = tokenize(text)
    if segments is None:
        return None
    out: list[Command] = []
    for words in segments:
        found = _segment(words, depth)
        if found is None:
            return None
        out.extend(found)
    # Command substitutions run wherever they stand, inside double quotes too. Single quotes
    # would keep them literal; reading them anyway errs toward asking.
    for inner in substitutions(strip_heredocs(text)):
        if depth >= _MAX_DEPTH:
            return None
        nested = commands(inner, depth=depth + 1)
        if nested is None:
            return None
        out.extend(nested)
    if depth == 0:
        unique = dict.fromkeys(out)  # a subshell is seen by the tokenizer and as a substitution
        return list(unique)
    return out


def _segment(words: list[str], depth: int, via_before: tuple[str, ...] = ()) -> list[Command] | None:
    """The commands one simple command runs: itself, or what its ``sh -c``/``eval`` body, its
    ``find -exec``, ``watch``, ``flock``… run; None if unreadable."""
    argv, indirect, via = unwrap(words)
    via = via_before + via
    if not argv:
        return []
    program = os.path.basename(argv[0]) if not indirect else argv[0]
    args = tuple(argv[1:])
    if indirect:
        return [Command(program=program, args=args, argv=tuple(argv), indirect=indirect, via=via)]
    body: str | None = None
    if program == "eval":
        body = " ".join(args)  # eval joins its arguments with spaces and reads the result
    elif program in SHELLS:
        body = _shell_c_argument(args)
    elif program == "alias":
        # `alias m='gh pr merge 1'; m`: what an alias stands for is read as if it ran
        body = "; ".join(value for arg in args if (value := arg.partition("=")[2]))
    if body is not None:
        return _nested_line(body, depth, via)
    out = [Command(program=program, args=args, argv=tuple(argv), indirect=indirect, via=via)]
    lines, argvs = _runs(program, args)
    inner_via = (*via, program)
    for line in lines:
        nested = _nested_line(line, depth, inner_via)
        if nested is None:
            return None
        out.extend(nested)
    for words_run in argvs:
        if depth >= _MAX_DEPTH:
            return None
        found = _segment(list(words_run), depth + 1, inner_via)
        if found is None:
            return None
        out.extend(found)
    return out


def _nested_line(body: str, depth: int, via: tuple[str, ...]) -> list[Command] | None:
    if depth >= _MAX_DEPTH:
        return None
    nested = commands(body, depth=depth + 1)
    if nested is None:
        return None
    return [Command(c.program, c.args, c.argv, c.indirect, via + c.via) for c in nested]


def _runs(program: str, args: tuple[str, ...]) -> tuple[list[str], list[tuple[str, ...]]]:
    """What ``program`` runs from its arguments: command lines, and argvs."""
    if program in _FIND_EXEC:
        return [], _find_exec(args, _FIND_EXEC[program], find=program == "find")
    lines: list[str] = []
    line_options = _LINE_OPTIONS.get(program, frozenset())
    for at, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if eq and name in line_options and name.startswith("--"):
            lines.append(value)
        elif (arg in line_options or _cluster_ending_in_c(arg, line_options)) and at + 1 < len(args):
            lines.append(args[at + 1])
    if program == "watch":
        rest = _after_options(args, _RUNNER_VALUE_OPTIONS["watch"])
        if rest:  # watch joins its arguments and runs them with `sh -c` (-x: as argv; read either way)
            lines.append(" ".join(rest))
    elif program == "parallel":
        rest = _after_options(args, _RUNNER_VALUE_OPTIONS["parallel"])
        cut = next((n for n, word in enumerate(rest) if word in (":::", "::::", ":::+", "::::+")), len(rest))
        if cut:  # GNU parallel runs its command through a shell, once per argument
            lines.append(" ".join(rest[:cut]))
    elif program == "flock" and not lines:
        rest = _after_options(args, _RUNNER_VALUE_OPTIONS["flock"])
        if len(rest) > 1:  # flock FILE CMD ARGS…
            return lines, [rest[1:]]
    return lines, []


def _cluster_ending_in_c(arg: str, line_options: frozenset[str]) -> bool:
    """``script -qc CMD``, ``su -lc CMD``: short options clustered, the last one ``-c``."""
    return "-c" in line_options and len(arg) > 2 and arg[0] == "-" and arg[1] != "-" and arg.endswith("c") \
        and arg[1:].isalpha()


def _find_exec(args: tuple[str, ...], actions: frozenset[str], *, find: bool) -> list[tuple[str, ...]]:
    """The command of each ``-exec CMD … ;`` (or ``+``, or the end of the line: the tokenizer
    reads an escaped semicolon as the end of the command too). ``find`` puts a path under one
    of its starting points where ``{}`` stands, so ``{}`` reads as ``ROOT/{}``, once per root:
    ``find / -exec rm -rf {} +`` removes under ``/``, ``find . …`` under the working directory."""
    roots = [""]
    if find:
        starts = [arg for arg in args[:next((n for n, a in enumerate(args) if a.startswith(("-", "(", "!"))),
                                             len(args))]]
        roots = [root.rstrip("/") + "/" if root.rstrip("/") else "/" for root in starts or ["."]]
    out: list[tuple[str, ...]] = []
    i = 0
    while i < len(args):
        if args[i] in actions:
            j = i + 1
            while j < len(args) and args[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                words = args[i + 1:j]
                out.extend(tuple(word.replace("{}", root + "{}") for word in words) for root in roots)
            i = j
        i += 1
    return list(dict.fromkeys(out))


def _after_options(args: tuple[str, ...], takes_value: frozenset[str]) -> tuple[str, ...]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "--":
            return args[i + 1:]
        i += 2 if args[i] in takes_value else 1
    return args[i:]


def substitutions(word: str) -> list[str]:
    """The command lines inside ``$(…)`` and backticks of a line (outermost only)."""
    found: list[str] = []
    i = 0
    while i < len(word):
        if word.startswith("$(", i) and not word.startswith("$((", i):
            level, j = 1, i + 2
            while j < len(word) and level:
                level += {"(": 1, ")": -1}.get(word[j], 0)
                j += 1
            found.append(word[i + 2 : j - 1] if level == 0 else word[i + 2 :])
            i = j
        elif word[i] == "`":
            end = word.find("`", i + 1)
            found.append(word[i + 1 : end] if end != -1 else word[i + 1 :])
            i = end + 1 if end != -1 else len(word)
        else:
            i += 1
    return [text for text in found if text.strip()]


def _shell_c_argument(args: tuple[str, ...]) -> str | None:
    """The command string of ``sh -c STRING`` (also ``-lc``, ``-ec``, ``-o pipefail -c``), or None."""
    i = 0
    found_c = False
    while i < len(args):
        arg = args[i]
        if found_c and not arg.startswith(("-", "+")):
            return arg
        if arg == "--":
            return args[i + 1] if found_c and i + 1 < len(args) else None
        if arg in _SHELL_VALUE_OPTIONS:
            i += 2
            continue
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            found_c = True
        elif not arg.startswith(("-", "+")):
            return None
        i += 1
    return "" if found_c else None


def reads_stdin(command: Command) -> bool:
    """A shell given neither ``-c`` nor a script runs whatever arrives on its standard input
    (``curl … | sh``, ``sh <<EOF``): commands the gate cannot see."""
    if command.indirect or command.program not in SHELLS or _shell_c_argument(command.args) is not None:
        return False
    i = 0
    while i < len(command.args):
        arg = command.args[i]
        if arg in _SHELL_VALUE_OPTIONS:
            i += 2
            continue
        if arg == "-s" or arg == "-":
            return True
        if not arg.startswith(("-", "+")):
            return False
        i += 1
    return True


def runs_script(command: Command) -> str:
    """``bash script.sh`` / ``source x``: the program is known but what it runs is not."""
    if command.program in ("source", "."):
        return f"source {command.args[0]}" if command.args else "source"
    if command.program in SHELLS and _shell_c_argument(command.args) is None:
        script = next((a for a in command.args if not a.startswith(("-", "+"))), None)
        if script:
            return f"{command.program} {script}"
    return ""


def split_words(text: str) -> list[str]:
    """Split like a shell would (for provider and classifier commands); raises ValueError."""
    return shlex.split(text)
