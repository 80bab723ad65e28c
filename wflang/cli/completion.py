"""``wf completion bash|zsh|fish``: a shell's completion script for ``wf``, written from
the parser itself, so that every command, action, flag and choice of a flag is offered
as ``wf`` accepts it (``tests/test_completion.py`` runs the bash one in bash).

Besides the words of the command line, what is cheap to know without a store: ``.wf``
files and folders where a command takes files, and the rule codes of ``wf rules``.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator

from attrs import field, frozen

from wflang.cli.framework import Command, Out, Result, arg

SHELLS = ("bash", "zsh", "fish")
#: The positional arguments that name .wf files or folders.
_FILE_ARGUMENTS = frozenset({"file", "files", "paths"})


@frozen
class Flag:
    names: tuple[str, ...]
    help: str
    takes_value: bool
    choices: tuple[str, ...]


@frozen
class Place:
    """A command path (``("ops", "retry")``; ``()`` is ``wf`` itself) and what may follow it."""

    path: tuple[str, ...]
    subcommands: tuple[tuple[str, str], ...]  # (word, help)
    flags: tuple[Flag, ...]
    positional: str  # "files", "rules" or "" (nothing to offer)


def places(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Place]:
    """Every command path of the parser, ``wf`` first."""
    subs: list[tuple[str, str, argparse.ArgumentParser]] = []
    flags: list[Flag] = []
    positional = ""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            subs += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
        elif action.option_strings:
            choices = tuple(str(c) for c in action.choices or ())
            flags.append(
                Flag(tuple(action.option_strings), action.help or "", action.nargs != 0, choices)
            )
        elif action.dest in _FILE_ARGUMENTS:
            positional = "files"
        elif action.dest == "rule":
            positional = "rules"
    yield Place(path, tuple((n, h) for n, h, _ in subs), tuple(flags), positional)
    for name, _, sub in subs:
        yield from places(sub, (*path, name))


def _rule_codes() -> str:
    from wflang.compiler import docs

    return " ".join(n for n in docs.rule_names() if n[:2] == "WF")


def bash(parser: argparse.ArgumentParser) -> str:
    every = list(places(parser))
    known = "|".join(shlex.quote(" " + " ".join(p.path)) for p in every if p.path)
    values, words = [], []
    for place in every:
        where = " " + " ".join(place.path) if place.path else ""
        for flag in place.flags:
            if flag.takes_value:
                offer = f"-W {shlex.quote(' '.join(flag.choices))}" if flag.choices else "-f"
                reply = f'COMPREPLY=($(compgen {offer} -- "$cur")); return ;;'
                values += [f"        {shlex.quote(where + '|' + n)}) {reply}" for n in flag.names]
        offered = [w for w, _ in place.subcommands] + [n for f in place.flags for n in f.names]
        kind = place.positional or "none"
        words.append(
            f"        {shlex.quote(where)}) words={shlex.quote(' '.join(offered))}; kind={kind} ;;"
        )
    return f"""# bash completion for wf (wflang): eval "$(wf completion bash)"
_wf_completion() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    local path="" words="" kind=none i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "$path ${{COMP_WORDS[i]}}" in
            {known}) path="$path ${{COMP_WORDS[i]}}" ;;
        esac
    done
    case "$path|$prev" in
{chr(10).join(values)}
    esac
    case "$path" in
{chr(10).join(words)}
    esac
    if [[ "$cur" == -* || "$kind" == none ]]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    elif [[ "$kind" == rules ]]; then
        COMPREPLY=($(compgen -W "{_rule_codes()}" -- "$cur"))
    else  # .wf files and folders
        COMPREPLY=($(compgen -f -X '!*.wf' -- "$cur") $(compgen -d -S / -- "$cur"))
        compopt -o nospace 2>/dev/null
    fi
}}
complete -o filenames -F _wf_completion wf
"""


def zsh(parser: argparse.ArgumentParser) -> str:
    return (
        '#compdef wf\n# zsh completion for wf (wflang): eval "$(wf completion zsh)", through\n'
        "# zsh's support for bash completion functions.\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + bash(parser)
    )


def fish(parser: argparse.ArgumentParser) -> str:
    lines = ["# fish completion for wf (wflang): wf completion fish | source", "complete -c wf -f"]
    for place in places(parser):
        if not place.path:
            seen = "__fish_use_subcommand"
        else:
            seen = "; and ".join(f"__fish_seen_subcommand_from {w}" for w in place.path)
        sub_words = " ".join(w for w, _ in place.subcommands)
        if sub_words and place.path:
            here = f"{seen}; and not __fish_seen_subcommand_from {sub_words}"
        else:
            here = seen
        for word, help in place.subcommands:
            lines.append(f"complete -c wf -n {shlex.quote(here)} -a {word} -d {shlex.quote(help)}")
        for flag in place.flags:
            names = " ".join(
                f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}" for n in flag.names
            )
            value = (
                f" -x -a {shlex.quote(' '.join(flag.choices))}"
                if flag.choices
                else (" -r -F" if flag.takes_value else "")
            )
            described = shlex.quote(flag.help[:80])
            lines.append(f"complete -c wf -n {shlex.quote(seen)} {names}{value} -d {described}")
        if place.positional == "files":
            lines.append(
                f"complete -c wf -n {shlex.quote(seen)} -k -a '(__fish_complete_suffix .wf)'"
            )
        elif place.positional == "rules":
            lines.append(f"complete -c wf -n {shlex.quote(seen)} -a {shlex.quote(_rule_codes())}")
    return "\n".join(lines) + "\n"


@frozen(kw_only=True)
class Completion:
    shell: str = field(
        metadata=arg(choices=SHELLS, help="the shell to write the completion script of")
    )


def completion(req: Completion) -> Result:
    from wflang.cli.app import build_parser

    write = {"bash": bash, "zsh": zsh, "fish": fish}[req.shell]
    out = Out()
    out.write(write(build_parser()))
    return out.done()


COMPLETION = Command(
    ("completion",),
    Completion,
    completion,
    help="print the shell completion script of wf for bash, zsh or fish",
    description="Print a script that completes wf's commands, actions, flags and their "
    "choices, .wf files and rule codes. bash: add 'eval \"$(wf completion bash)\"' to "
    "~/.bashrc; zsh: 'eval \"$(wf completion zsh)\"' in ~/.zshrc; fish: "
    "'wf completion fish > ~/.config/fish/completions/wf.fish'.",
)

#: This module's commands.
COMMANDS = (COMPLETION,)
