"""Reading a shell command line the way the shell would, without running one.

A rule about ``git push`` must fire for ``cd x && sudo -E git -C y push``, for
``bash -c 'git push'`` and for ``FOO=1 timeout 30 git push``, and must not fire for
``gh issue create --body "never git push"``. So the line is split into simple commands
(``;``, ``&&``, ``||``, ``|``, ``&``, subshells, newlines; heredoc bodies dropped), each
command's wrappers are stepped over to the program that actually runs, and ``sh -c``
arguments are read as command lines of their own.

What cannot be read is said so: a line with an unbalanced quote yields ``None`` (callers
fall back to matching the whole text, which fails toward asking), and a program position
holding ``eval``, a variable or a command substitution is reported as *indirect*.
"""

from __future__ import annotations

import os
import re
import shlex

from gitvow_gate.plain_record import record

#: Words that run the rest of the line as a command. Options to them are stepped over too.
WRAPPERS = frozenset({"sudo", "doas", "env", "time", "nohup", "exec", "command", "nice", "xargs", "builtin", "stdbuf",
                      "busybox", "setsid", "ionice", "unbuffer", "chronic", "caffeinate"})
#: Shell reserved words that may stand before a command (``if rm …``, ``then rm …``, ``{ rm …; }``).
KEYWORDS = frozenset({"{", "}", "!", "if", "then", "else", "elif", "fi", "while", "until", "do", "done", "in", "esac"})
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


@record
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
    """Whether ``word`` is a redirection, and whether its target is the next word (``> file``)."""
    match = re.match(_REDIRECTION, word)
    if match is None:
        return False, False
    return True, match.end() == len(word)


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
        base = os.path.basename(word)
        if base in WRAPPERS or base in WRAPPERS_WITH_ARGUMENT:
            via.append(base)
            i += 1
            takes_value = _WRAPPER_VALUE_OPTIONS.get(base, frozenset())
            while i < len(words) and (words[i].startswith("-") or (base == "env" and _assignment(words[i]))):
                option = words[i]
                i += 1
                if option == "--":
                    break
                if base == "env" and option in ("-S", "--split-string") and i < len(words):
                    # env -S 'rm -rf' /: the value is split into words and run
                    split = split_or_none(words[i])
                    if split is None:
                        return words[i:], "env -S with a string the gate cannot split", tuple(via)
                    words = words[:i] + split + words[i + 1 :]
                    continue
                if base == "env" and option.startswith("--split-string="):
                    split = split_or_none(option.partition("=")[2])
                    if split is None:
                        return words[i:], "env -S with a string the gate cannot split", tuple(via)
                    words = words[:i] + split + words[i:]
                    continue
                if option in takes_value and i < len(words):
                    i += 1
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
        argv, indirect, via = unwrap(words)
        if not argv:
            continue
        program = os.path.basename(argv[0]) if not indirect else argv[0]
        args = tuple(argv[1:])
        body: str | None = None
        if not indirect and program == "eval":
            body = " ".join(args)  # eval joins its arguments with spaces and reads the result
        elif not indirect and program in SHELLS:
            body = _shell_c_argument(args)
        if body is not None:
            if depth >= _MAX_DEPTH:
                return None
            nested = commands(body, depth=depth + 1)
            if nested is None:
                return None
            out.extend(Command(c.program, c.args, c.argv, c.indirect, via + c.via) for c in nested)
            continue
        out.append(Command(program=program, args=args, argv=tuple(argv), indirect=indirect, via=via))
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
