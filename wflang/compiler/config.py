"""Configuration of ``wf check``: a preset and per-rule severities.

Read from ``[tool.wflang]`` in the nearest ``pyproject.toml``::

    [tool.wflang]
    preset = "recommended"          # or "strict", "all"
    import-paths = ["../shared"]    # folders outside the project that imports may read
    [tool.wflang.rules]
    WF212 = "off"                   # or "info", "warning", "error"
    unused-declaration = "error"    # rules may be named by code or by name

``recommended`` turns on the rules marked so, at their default severity;
``strict`` adds the strict rules and raises warnings to errors; ``all`` turns on
every rule at its default severity.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import field, frozen

from wflang.compiler.registry import RULES, Preset, Rule
from wflang.dsl.diagnostics import CODES, Severity

_LEVELS = {"off": None, "info": Severity.INFO, "warning": Severity.WARNING, "error": Severity.ERROR}


class ConfigError(Exception):
    """The configuration names an unknown preset, rule or level."""


@frozen
class Config:
    preset: Preset = Preset.RECOMMENDED
    severities: Mapping[str, Severity | None] = field(factory=dict)  # code id -> level
    source: str | None = None  # the file it came from

    def severity(self, rule: Rule) -> Severity | None:
        """The severity a rule reports at under this configuration, or None when off."""
        if rule.id in self.severities:
            return self.severities[rule.id]
        if self.preset is Preset.ALL:
            return rule.code.severity
        if rule.preset is Preset.ALL or (
            rule.preset is Preset.STRICT and self.preset is Preset.RECOMMENDED
        ):
            return None
        if self.preset is Preset.STRICT and rule.code.severity is Severity.WARNING:
            return Severity.ERROR
        return rule.code.severity


def parse_config(table: Mapping[str, object], source: str | None = None) -> Config:
    """Validate a ``[tool.wflang]`` table."""
    preset_name = table.get("preset", "recommended")
    try:
        preset = Preset(preset_name)
    except ValueError as err:
        names = ", ".join(p.value for p in Preset)
        raise ConfigError(f"unknown preset {preset_name!r}; the presets are {names}") from err
    paths = table.get("import-paths", [])  # read by the import loader (compiler/program.py)
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ConfigError("[tool.wflang] import-paths must be a list of folders")
    rules = table.get("rules", {})
    if not isinstance(rules, Mapping):
        raise ConfigError("[tool.wflang.rules] must be a table of rule = level")
    severities: dict[str, Severity | None] = {}
    for key, level in rules.items():
        code = CODES.lookup(str(key))
        if code is None or code.id not in RULES:
            raise ConfigError(f"unknown rule {key!r} in [tool.wflang.rules] (see 'wf rules')")
        if level not in _LEVELS:
            raise ConfigError(
                f"rule {key}: level must be one of {', '.join(_LEVELS)}, not {level!r}"
            )
        severities[code.id] = _LEVELS[str(level)]
    return Config(preset, severities, source)


def selected(
    config: Config,
    *,
    select: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    ignore: Sequence[str] = (),
) -> Config:
    """``config`` with the rules chosen on the command line, as ruff's options choose
    them: ``select`` the only rules checked (at the level ``config`` gives them, or their
    default when it turns them off), ``extend_select`` rules added to those, ``ignore``
    rules turned off (it wins). Each names rules by code, by name or by a prefix of codes
    (``WF2``), several at once separated by commas."""
    if not (select or extend_select or ignore):
        return config
    only = _rules_named(select, "--select") if select else None
    extra = _rules_named(extend_select, "--extend-select")
    off = _rules_named(ignore, "--ignore")
    severities: dict[str, Severity | None] = {}
    for rule in RULES.values():
        level = config.severity(rule)
        wanted = rule.id in extra or (only is not None and rule.id in only)
        if rule.id in off or (only is not None and not wanted):
            level = None
        elif wanted and level is None:
            level = rule.code.severity
        severities[rule.id] = level
    return Config(config.preset, severities, config.source)


def _rules_named(keys: Sequence[str], option: str) -> set[str]:
    found: set[str] = set()
    for key in (k.strip() for joined in keys for k in joined.split(",")):
        code = CODES.lookup(key)
        named = (
            {code.id} & RULES.keys() if code else {r for r in RULES if r.startswith(key.upper())}
        )
        if not key or not named:
            raise ConfigError(f"{option}: unknown rule or prefix {key!r} (see 'wf rules')")
        found |= named
    return found


def load_config(start: Path | None = None) -> Config:
    """The configuration of the nearest pyproject.toml with a [tool.wflang] table."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError) as err:
                raise ConfigError(f"cannot read {candidate}: {err}") from err
            tool = data.get("tool", {}).get("wflang")
            if tool is not None:
                return parse_config(tool, str(candidate))
    return Config()
