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

from gitvow_gate.records import record

#: Words that run the rest of the line as a command. Options to them are stepped over too.
WRAPPERS = frozenset({"sudo", "doas", "env", "time", "nohup", "exec", "command", "nice", "xargs", "builtin", "stdbuf"})
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
}
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
    segments: list[list[str]] = []
    current: list[str] = []
    try:
        for token in lexer:
            if token and set(token) <= _OPERATOR_CHARS:
                if current:
                    segments.append(current)
                current = []
            else:
                current.append(token)
    except ValueError:
        return None
    if current:
        segments.append(current)
    return segments


def unwrap(words: list[str]) -> tuple[list[str], str]:
    """Step over ``VAR=x``, ``sudo -u x``, ``env -i``, ``timeout 30``, ``nohup``, ``xargs``…

    Returns the remaining argv (program first) and, when the program position cannot be
    read, the reason why.
    """
    i = 0
    while i < len(words):
        word = words[i]
        if _assignment(word):
            i += 1
            continue
        base = os.path.basename(word)
        if base in WRAPPERS or base in WRAPPERS_WITH_ARGUMENT:
            i += 1
            takes_value = _WRAPPER_VALUE_OPTIONS.get(base, frozenset())
            while i < len(words) and (words[i].startswith("-") or (base == "env" and _assignment(words[i]))):
                option = words[i]
                i += 1
                if option == "--":
                    break
                if option in takes_value and i < len(words):
                    i += 1
            if base in WRAPPERS_WITH_ARGUMENT and i < len(words):
                i += 1  # the duration of `timeout 30`
            continue
        break
    rest = words[i:]
    if not rest:
        return [], ""
    program = rest[0]
    if program == "eval":
        return rest, "eval"
    if _variable(program) or program.startswith(("$(", "`")) or program == "$":
        return rest, f"{program} (a variable or substitution in program position)"
    return rest, ""


def commands(text: str, *, depth: int = 0) -> list[Command] | None:
    """Every simple command of a line, wrappers removed, ``sh -c`` followed; None if unreadable."""
    segments = tokenize(text)
    if segments is None:
        return None
    out: list[Command] = []
    for words in segments:
        argv, indirect = unwrap(words)
        if not argv:
            continue
        program = os.path.basename(argv[0]) if not indirect else argv[0]
        args = tuple(argv[1:])
        if not indirect and program in SHELLS and depth < _MAX_DEPTH:
            inner = _shell_c_argument(args)
            if inner is not None:
                nested = commands(inner, depth=depth + 1)
                if nested is None:
                    return None
                out.extend(nested)
                continue
        out.append(Command(program=program, args=args, argv=tuple(argv), indirect=indirect))
    if depth < _MAX_DEPTH:
        # Command substitutions run wherever they stand, inside double quotes too. Single
        # quotes would keep them literal; reading them anyway errs toward asking.
        for inner in substitutions(strip_heredocs(text)):
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
    """The command string of ``sh -c STRING`` (also ``-lc``, ``-ec``), or None."""
    for i, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return args[i + 1] if i + 1 < len(args) else ""
        if not arg.startswith("-"):
            return None
    return None


def runs_script(command: Command) -> str:
    """``bash script.sh`` / ``source x``: the program is known but what it runs is not."""
    if command.program in ("source", "."):
        return f"source {command.args[0]}" if command.args else "source"
    if command.program in SHELLS and _shell_c_argument(command.args) is None:
        script = next((a for a in command.args if not a.startswith("-")), None)
        if script:
            return f"{command.program} {script}"
    return ""


def split_words(text: str) -> list[str]:
    """Split like a shell would (for provider and classifier commands); raises ValueError."""
    return shlex.split(text)
