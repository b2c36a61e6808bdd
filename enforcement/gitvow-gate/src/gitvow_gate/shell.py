"""Reading a shell command line the way the shell would, without running one.

A rule about ``git push`` must fire for ``cd x && sudo -E git -C y push``, for
``bash -c 'git push'`` and for ``FOO=1 timeout 30 git push``, and must not fire for
``gh issue create --body "never git push"``. So the line is split into simple commands
(``;``, ``&&``, ``||``, ``|``, ``&``, subshells, newlines; heredoc bodies dropped), each
command's wrappers are stepped over to the program that actually runs, and ``sh -c``
arguments are read as command lines of their own. What a line defines to run later is read
as if it ran: function bodies (``f() { …; }``, ``function f { …; }``), ``coproc``, aliases,
``trap`` handlers, git configuration and environment variables that name a command. ANSI-C
strings (``$'\\x67h'``) are decoded and redirections glued to a word split off before
:mod:`shlex` sees the line; a here-string given to a shell is read as its script.
Programs that run another command from their arguments are followed into it: wrappers
(``env -S'…'`` split as ``env`` splits it, options clustered or with attached values),
``find -exec``/``-execdir``/``-ok``/``-okdir`` (and ``fd --exec``), ``watch``, ``flock``,
``su``/``runuser -c``, ``script -c`` (also clustered: ``script -qc``), GNU ``parallel``,
``ssh HOST CMD``, ``sg``, ``gdb --args`` and the argv runners of :data:`_ARGV_RUNNERS`.

What cannot be read is said so: a line with an unbalanced quote yields ``None`` (callers
fall back to matching the whole text, which fails toward asking), and a program position
holding ``eval``, a variable or a command substitution is reported as *indirect*.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

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
    "runuser": frozenset({"-u", "--user", "-g", "--group", "-G", "--supp-group", "-s", "--shell", "-w",
                          "--whitelist-environment"}),
    "ssh": frozenset({"-B", "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p",
                      "-Q", "-R", "-S", "-W", "-w"}),
    "parallel": frozenset({"-j", "--jobs", "-S", "--sshlogin", "-N", "-n", "--max-args", "-d", "--delimiter",
                           "-a", "--arg-file", "--joblog", "--results", "-I", "--timeout", "--delay"}),
}
#: Options of a shell that take a separate value, so ``bash -o pipefail -c CMD`` is still ``-c``.
_SHELL_VALUE_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
#: ``2>/dev/null``, ``>>log``, ``<in``, ``&>all``, ``2>&1``: redirections are not arguments.
_REDIRECTION = r"^(?:\d+|&)?(?:<<<|>>?|<<?|>&|<&|>\||<>)"
#: ``<<< WORD`` and ``<<<WORD``: a here-string, the standard input of the command.
_HERE_STRING = r"^\d*<<<"
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
    lexer = shlex.shlex(normalize(strip_heredocs(text)), posix=True, punctuation_chars=";&|()\n")
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


#: bash's ANSI-C escapes (``$'\x67h'`` is ``gh``).
_ANSI_C = r"\\(?:([abeEfnrtv\\'\"?])|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|([0-7]{1,3})|c(.))"
_ANSI_C_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                  "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
#: Characters that end an unquoted word (and so a redirection's claim to a file-descriptor number).
_WORD_ENDS = frozenset(" \t\r\n;&|()")


def _ansi_c_escape(match: re.Match[str]) -> str:
    simple, hex2, hex4, hex8, octal, control = match.groups()
    if simple is not None:
        return _ANSI_C_SIMPLE[simple]
    if control is not None:
        return chr(ord(control.upper()) ^ 0x40) if control.isascii() else control
    number = int(octal, 8) if octal is not None else int(hex2 or hex4 or hex8, 16)
    return chr(number) if number <= 0x10FFFF else "\ufffd"


def _ansi_c_end(text: str, start: int) -> int:
    """Where the ``$'…'`` string whose body starts at ``start`` ends (its closing quote), or -1."""
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == "'":
            return i
        else:
            i += 1
    return -1


class _Normalizer:
    """One pass over a line, quote by quote, rewriting what :mod:`shlex` does not read as bash does:

    - ``$'…'`` (ANSI-C quoting) becomes the single-quoted string it stands for: ``$'\x67h'`` is ``'gh'``;
    - ``$"…"`` (a translated string) becomes ``"…"``;
    - a backslash-newline (a line continuation) is removed, outside single quotes;
    - a redirection glued to the word before it gets a space: ``gh>/dev/null pr merge`` runs
      ``gh``, and ``bash<<<'…'`` is ``bash`` reading a here-string. A file-descriptor number
      stays attached (``2>&1``), as the shell reads it.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.word = ""  # the unquoted word so far (to tell ``2>`` from ``gh>``)

    def run(self) -> str:
        text, i, quote = self.text, 0, ""
        while i < len(text):
            c = text[i]
            if c == "\\" and text[i + 1:i + 2] == "\n" and quote != "'":
                i += 2  # a line continuation: the shell removes both, inside double quotes too
            elif quote:
                i, quote = self._quoted(i, quote)
            elif c == "\\":
                self._emit(text[i:i + 2])
                i += 2
            elif c in "'\"":
                quote = c
                self._emit(c)
                i += 1
            elif c == "$" and text[i + 1:i + 2] in ("'", '"'):
                i = self._dollar_quote(i)
            elif c == "$" and text[i + 1:i + 2] == "{":
                i = self._parameter(i)
            else:
                self._unquoted(c)
                i += 1
        return "".join(self.out)

    def _quoted(self, i: int, quote: str) -> tuple[int, str]:
        c = self.text[i]
        if c == "\\" and quote == '"':
            self._emit(self.text[i:i + 2])
            return i + 2, quote
        self._emit(c)
        return i + 1, ("" if c == quote else quote)

    def _dollar_quote(self, i: int) -> int:
        if self.text[i + 1] == '"':
            return i + 1  # the string itself is read as double-quoted
        end = _ansi_c_end(self.text, i + 2)
        if end < 0:
            self._emit(self.text[i:])  # unbalanced: shlex refuses it, and so the line is unreadable
            return len(self.text)
        body = re.sub(_ANSI_C, _ansi_c_escape, self.text[i + 2:end])
        self._emit("'" + body.replace("'", "'\"'\"'") + "'")
        return end + 1

    def _parameter(self, i: int) -> int:
        """``${…}`` as it stands: a ``<`` or ``>`` inside (``${x:-a>b}``) is no redirection."""
        depth, j = 0, i + 1
        while j < len(self.text):
            depth += {"{": 1, "}": -1}.get(self.text[j], 0)
            j += 1
            if depth == 0:
                break
        self._emit(self.text[i:j])
        return j

    def _unquoted(self, c: str) -> None:
        if c in _WORD_ENDS:
            self.out.append(c)
            self.word = ""
            return
        if c in "<>" and self.word and not self.word.isdigit() and self.word[-1] not in "<>&":
            self.out.append(" ")
            self.word = ""
        self._emit(c)

    def _emit(self, chunk: str) -> None:
        self.out.append(chunk)
        self.word += chunk


def normalize(text: str) -> str:
    """The line with ANSI-C strings decoded and glued redirections spaced (:class:`_Normalizer`)."""
    if "$" not in text and "<" not in text and ">" not in text and "\\\n" not in text:
        return text
    return _Normalizer(text).run()


def _redirection(word: str) -> tuple[bool, bool]:
    """Whether ``word`` is a redirection, and whether its target is the next word (``> file``).

    What ``re.match(_REDIRECTION, word)`` answers, read by hand so that no regex is compiled
    on every hook call: an optional file descriptor (decimal digits, as ``\\d``) or ``&``,
    then ``<<<`` (a here-string), or ``>`` or ``<``, doubled or not (the pattern's
    alternatives ``>>?`` and ``<<?`` already match the start of ``>&``, ``<&``, ``>|`` and ``<>``).
    """
    i = 1 if word.startswith("&") else 0
    if not i:
        while i < len(word) and word[i].isdecimal():
            i += 1
    if i >= len(word) or word[i] not in "<>":
        return False, False
    if word.startswith("<<<", i):
        return True, i + 3 == len(word)  # a here-string: `<<< WORD` takes the next word
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
    if _expands(program):
        return rest, f"{program} (a variable, substitution or pattern in program position)", tuple(via)
    return rest, "", tuple(via)


def _expands(word: str) -> bool:
    """Whether the shell would turn ``word`` into something else before running it: a variable or
    command substitution anywhere in it (``gh$IFS…``), a glob (``/usr/bin/g?``), a brace expansion
    (``{gh,pr,merge,1}``). Quotes are gone by now, so a quoted ``$`` reads as one too: asking is
    the safe side."""
    if "$" in word or "`" in word or "*" in word or "?" in word:
        return True
    if "[" in word and "]" in word[word.index("[") + 1:]:
        return True
    return "{" in word and "}" in word and ("," in word or ".." in word)


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
    here = _here_strings(words)
    assigned = _assigned_lines(words)
    argv, indirect, via = unwrap(words)
    via = via_before + via
    if not argv:
        return _also(depth, via, [], assigned, [])
    program = os.path.basename(argv[0]) if not indirect else argv[0]
    args = tuple(argv[1:])
    if indirect:
        return [Command(program=program, args=args, argv=tuple(argv), indirect=indirect, via=via)]
    body = _body(program, args, here)
    if body is not None:
        return _also(depth, via, [], [body, *assigned], [])
    lines, argvs = _runs(program, args)
    out = [Command(program=program, args=args, argv=tuple(argv), indirect=indirect, via=via)]
    return _also(depth, (*via, program), out, [*lines, *assigned], argvs)


def _also(depth: int, via: tuple[str, ...], out: list[Command], lines: list[str],
          argvs: list[tuple[str, ...]]) -> list[Command] | None:
    """``out`` and what the command lines and argvs a command runs from its arguments run in turn."""
    for line in lines:
        nested = _nested_line(line, depth, via)
        if nested is None:
            return None
        out.extend(nested)
    for words_run in argvs:
        if depth >= _MAX_DEPTH:
            return None
        found = _segment(list(words_run), depth + 1, via)
        if found is None:
            return None
        out.extend(found)
    return out


#: Environment variables whose value git, ssh or a shell runs as a command line
#: (``GIT_SSH_COMMAND='…' git fetch``, ``BASH_ENV``): read as if they ran.
_COMMAND_VARIABLES = frozenset({"GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "PAGER", "GIT_EDITOR", "EDITOR", "VISUAL",
                                "GIT_SEQUENCE_EDITOR", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS",
                                "GIT_PROXY_COMMAND", "BASH_ENV", "ENV", "PROMPT_COMMAND", "MANPAGER", "LESSOPEN"})


def _assigned_lines(words: list[str]) -> list[str]:
    """The values of :data:`_COMMAND_VARIABLES` a simple command sets (before its program, after
    ``env`` or ``export``): command lines that run with it."""
    found = []
    for word in words:
        name, eq, value = word.partition("=")
        if eq and name in _COMMAND_VARIABLES and value.strip():
            found.append(value.lstrip("|"))  # LESSOPEN='|cmd %s'
    return found


def _body(program: str, args: tuple[str, ...], here: list[str]) -> str | None:
    """The command line ``program`` runs in place of itself, if it is one that runs a line:
    ``eval``, ``sh -c``, a shell reading a here-string, an alias or ``trap`` definition (read as
    if it ran)."""
    if program == "eval":
        return " ".join(args)  # eval joins its arguments with spaces and reads the result
    if program in SHELLS:
        line = _shell_c_argument(args)
        if line is None and here and _reads_commands_from_stdin(program, args):
            return "\n".join(here)  # `bash <<< 'gh pr merge 1'`: the here-string is the script
        return line
    if program in ("source", ".") and here and args and args[0] in _STDIN_FILES:
        return "\n".join(here)
    if program == "alias":
        # `alias m='gh pr merge 1'; m`: what an alias stands for is read as if it ran
        return "; ".join(value for arg in args if (value := arg.partition("=")[2]))
    if program == "trap":
        # `trap 'gh pr merge 1' EXIT`: the handler runs later in the same shell
        handler = [a for a in args if a not in ("-p", "-l", "--")]
        return handler[0] if handler else None
    return None


#: Files that are the standard input: ``bash /dev/stdin <<< …``, ``source /dev/stdin``.
_STDIN_FILES = frozenset({"/dev/stdin", "-", "/dev/fd/0", "/proc/self/fd/0"})


def _here_strings(words: list[str]) -> list[str]:
    """The here-strings of a simple command (``<<< 'text'``, ``<<<text``): its standard input."""
    found: list[str] = []
    for at, word in enumerate(words):
        match = re.match(_HERE_STRING, word) if "<<<" in word else None
        if match is None:
            continue
        rest = word[match.end():]
        if rest:
            found.append(rest)
        elif at + 1 < len(words):
            found.append(words[at + 1])
    return found


def _reads_commands_from_stdin(program: str, args: tuple[str, ...]) -> bool:
    """A shell given no ``-c``: it reads its script from standard input (or names it as a file)."""
    command = Command(program=program, args=args, argv=(program, *args))
    if reads_stdin(command):
        return True
    script = next((a for a in args if not a.startswith(("-", "+"))), None)
    return script in _STDIN_FILES


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
    lines = _line_option_values(program, args)
    reader = _RUNNERS.get(program)
    if reader is not None:
        more, argvs = reader(args, bool(lines))
        return [*lines, *more], argvs
    runner = _ARGV_RUNNERS.get(program)
    if runner is not None:
        rest = _after_options(args, runner[0])[runner[1]:]
        return lines, [rest] if rest else []
    return lines, []


def _line_option_values(program: str, args: tuple[str, ...]) -> list[str]:
    """The command lines given to ``program`` as an option's value: ``su -c LINE``, ``script -qc LINE``."""
    lines: list[str] = []
    line_options = _LINE_OPTIONS.get(program, frozenset())
    if not line_options:
        return lines
    for at, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if eq and name in line_options and name.startswith("--"):
            lines.append(value)
        elif (arg in line_options or _cluster_ending_in_c(arg, line_options)) and at + 1 < len(args):
            lines.append(args[at + 1])
    return lines


Runs = tuple[list[str], list[tuple[str, ...]]]


def _watch(args: tuple[str, ...], _has_line: bool) -> Runs:
    rest = _after_options(args, _RUNNER_VALUE_OPTIONS["watch"])
    # watch joins its arguments and runs them with `sh -c` (-x: as argv; read either way)
    return ([" ".join(rest)] if rest else []), []


_PARALLEL_SEPARATORS = frozenset({":::", "::::", ":::+", "::::+"})


def _parallel(args: tuple[str, ...], _has_line: bool) -> Runs:
    """GNU parallel runs its command through a shell, once per argument; with no command before
    ``:::``, each argument is a command line of its own."""
    rest = _after_options(args, _RUNNER_VALUE_OPTIONS["parallel"])
    cut = next((n for n, word in enumerate(rest) if word in _PARALLEL_SEPARATORS), len(rest))
    if cut:
        return [" ".join(rest[:cut])], []
    return [word for word in rest if word not in _PARALLEL_SEPARATORS], []


def _flock(args: tuple[str, ...], has_line: bool) -> Runs:
    rest = _after_options(args, _RUNNER_VALUE_OPTIONS["flock"])
    # flock FILE CMD ARGS… (unless -c gave it a line)
    return [], ([rest[1:]] if len(rest) > 1 and not has_line else [])


def _runuser(args: tuple[str, ...], has_line: bool) -> Runs:
    """``runuser -u USER [--] CMD ARGS…`` (``runuser USER -c LINE`` is a line option)."""
    if has_line or not any(a in ("-u", "--user") or a.startswith(("--user=", "-u")) for a in args):
        return [], []
    rest = _after_options(args, _RUNNER_VALUE_OPTIONS["runuser"])
    return [], ([rest] if rest else [])


def _ssh(args: tuple[str, ...], _has_line: bool) -> Runs:
    """``ssh HOST CMD ARGS…``: ssh joins the words after the host and a shell there reads them."""
    rest = _after_options(args, _RUNNER_VALUE_OPTIONS["ssh"])
    return ([" ".join(rest[1:])] if len(rest) > 1 else []), []


def _sg(args: tuple[str, ...], _has_line: bool) -> Runs:
    """``sg [-] GROUP [-c] LINE``: the line runs through ``/bin/sh -c``."""
    rest = [a for a in args if a not in ("-", "-c")]
    return ([" ".join(rest[1:])] if len(rest) > 1 else []), []


def _gdb(args: tuple[str, ...], _has_line: bool) -> Runs:
    """``gdb --args PROGRAM ARGS…`` runs the program."""
    if "--args" not in args:
        return [], []
    rest = args[args.index("--args") + 1:]
    return [], ([rest] if rest else [])


#: git configuration whose value git runs through a shell (``alias.*`` when it starts with ``!``).
_GIT_COMMAND_KEYS = frozenset({"core.pager", "core.editor", "core.sshcommand", "core.fsmonitor", "core.askpass",
                               "sequence.editor", "diff.external", "gpg.program", "gpg.ssh.program",
                               "gpg.x509.program", "credential.helper", "interactive.difffilter"})


def _git(args: tuple[str, ...], _has_line: bool) -> Runs:
    """``git -c alias.m='!LINE' m``, ``git -c core.pager=LINE log``: configuration given on the
    command line that git runs as a command line, read as if it ran."""
    lines = []
    for at, arg in enumerate(args):
        if arg != "-c" or at + 1 >= len(args):
            continue
        key, eq, value = args[at + 1].partition("=")
        key = key.lower()
        if not eq or not value.strip():
            continue
        if value.startswith("!") or key in _GIT_COMMAND_KEYS or key.startswith("pager."):
            lines.append(value.removeprefix("!"))
    return lines, []


_RUNNERS = {"watch": _watch, "parallel": _parallel, "flock": _flock, "runuser": _runuser, "ssh": _ssh, "sg": _sg,
            "gdb": _gdb, "git": _git}

#: Programs that run the rest of their arguments as a command: (options that take a separate
#: value, how many arguments of their own stand before the command).
_ARGV_RUNNERS: dict[str, tuple[frozenset[str], int]] = {
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "chrt": (frozenset(), 1),
    "taskset": (frozenset(), 1),
    "faketime": (frozenset({"-m", "-f"}), 1),
    "unshare": (frozenset({"-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd", "--map-user",
                           "--map-group", "--map-users", "--map-groups", "--propagation", "--setgroups"}), 0),
    "nsenter": (frozenset({"-t", "--target", "-S", "--setuid", "-G", "--setgid", "-Z"}), 0),
    "strace": (frozenset({"-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-S", "-P", "-X", "-U"}), 0),
    "ltrace": (frozenset({"-o", "-e", "-p", "-s", "-u", "-n", "-a", "-A", "-D", "-F", "-l", "-x", "-w", "-L"}), 0),
    "valgrind": (frozenset(), 0),
    "firejail": (frozenset(), 0),
    "systemd-run": (frozenset({"-p", "--property", "-E", "--setenv", "-u", "--unit", "--uid", "--gid", "--slice",
                               "-M", "--machine", "-H", "--host", "--description", "--working-directory"}), 0),
    "pkexec": (frozenset({"--user"}), 0),
    "prlimit": (frozenset({"-p", "--pid"}), 0),
    "setpriv": (frozenset(), 0),
    "cgexec": (frozenset({"-g"}), 0),
    "numactl": (frozenset({"-N", "-m", "-C", "-p", "-i", "-P"}), 0),
    "xvfb-run": (frozenset({"-n", "--server-num", "-s", "--server-args", "-e", "--error-file", "-f", "--auth-file",
                            "-p", "--xauth-protocol", "-w", "--wait"}), 0),
    "dbus-run-session": (frozenset({"--config-file", "--dbus-daemon"}), 0),
    "proxychains": (frozenset({"-f"}), 0),
    "proxychains4": (frozenset({"-f"}), 0),
    "torsocks": (frozenset({"-u", "--user", "-p", "--pass", "-a", "--address", "-P", "--port"}), 0),
    "catchsegv": (frozenset(), 0),
}


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
    if command.indirect:
        return False
    if command.program in ("source", "."):
        # `source <(…)` (the tokenizer leaves no file), `source /dev/stdin`: what it runs is not here
        return not command.args or command.args[0] in _STDIN_FILES
    if command.program not in SHELLS or _shell_c_argument(command.args) is not None:
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
