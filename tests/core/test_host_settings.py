"""Host settings in process: the reserved flags, resolving flags and pairs, declaration checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import click.testing
import pytest
import typer

from sevro_core.errors import InvocationError
from sevro_core.plugin.hostsettings import (
    RESERVED_FLAGS,
    check_declarations,
    option_name,
    resolve_settings,
)
from sevro_core.plugin.protocols import HostSetting

BIN = HostSetting("acme.bin", "--acme-bin", "Binary.", "path")
TOKEN_ENV = HostSetting("acme.tokenEnv", "--acme-token-env", "Variable.", "string", secret=True)


class Acme:
    settings = (BIN, TOKEN_ENV)


class Bare:
    """A host written before settings existed: it declares none."""


HOSTS: dict[str, Any] = {"acme.host.tool": Acme(), "sevro.host.bare": Bare()}


def test_reserved_flags_are_the_core_commands_own() -> None:
    from sevro_core.cli import app

    group = typer.main.get_group(app)
    ctx = group.make_context("sevro", ["run", "--help"], resilient_parsing=True)
    flags = {o for p in group.params for o in p.opts if o.startswith("--")}
    judge = group.commands["judge"]
    assert isinstance(judge, click.Group)
    for command in (group.commands["run"], group.commands["doctor"], judge.commands["calibrate"]):
        flags |= {o for p in command.params for o in p.opts if o.startswith("--")}
    holdout = group.commands["holdout"]  # seal takes run's flags, --output and --seed
    assert isinstance(holdout, click.Group)
    flags |= {o for p in holdout.commands["seal"].params for o in p.opts if o.startswith("--")}
    flags.add(ctx.help_option_names[-1])
    assert flags == RESERVED_FLAGS


def test_flags_and_pairs_resolve_by_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    given = resolve_settings(
        HOSTS, "acme.host.tool", {option_name(BIN): "bin/tool"}, ["acme.tokenEnv=KEY=1"]
    )
    assert given == {"acme.bin": str(tmp_path / "bin" / "tool"), "acme.tokenEnv": "KEY=1"}
    assert resolve_settings(HOSTS, "bare", {}, []) == {}


@pytest.mark.parametrize(
    ("host", "flags", "pairs", "message"),
    [
        ("bare", {option_name(BIN): "/x"}, [], "--acme-bin needs --host acme.host.tool"),
        ("acme.host.tool", {}, ["acme.nope=1"], "known: acme.bin, acme.tokenEnv"),
        ("bare", {}, ["acme.bin=/x"], "is not a setting of --host bare (known: none)"),
        ("acme.host.tool", {}, ["acme.bin"], "must be KEY=VALUE"),
        ("acme.host.tool", {}, [" =x"], "must be KEY=VALUE"),
        (
            "acme.host.tool",
            {option_name(BIN): "/x"},
            ["acme.bin=/y"],
            "acme.bin is given twice (--acme-bin and --host-setting)",
        ),
    ],
)
def test_bad_settings_are_refused(
    host: str, flags: dict[str, str], pairs: list[str], message: str
) -> None:
    with pytest.raises(InvocationError) as raised:
        resolve_settings(HOSTS, host, flags, pairs)
    assert message in raised.value.one_line()


def test_a_malformed_pair_never_echoes_its_value() -> None:
    with pytest.raises(InvocationError) as raised:
        resolve_settings(HOSTS, "acme.host.tool", {}, ["sk-secret-token"])
    assert "sk-secret" not in raised.value.one_line()


def test_declarations_are_checked() -> None:
    check_declarations(HOSTS, {})

    class Clash:
        settings = (HostSetting("other.bin", "--acme-bin", "Clash.", "path"),)

    with pytest.raises(InvocationError, match="flag --acme-bin is declared twice"):
        check_declarations({**HOSTS, "other.host.clash": Clash()}, {"other.host.clash": "file:x"})

    class NotASetting:
        settings = ({"key": "acme.bin"},)

    with pytest.raises(InvocationError, match="not a HostSetting"):
        check_declarations({"acme.host.odd": NotASetting()}, {})

    class NotATuple:
        settings = "acme.bin"

    with pytest.raises(InvocationError, match="not a tuple of HostSetting"):
        check_declarations({"acme.host.odd": NotATuple()}, {})


STRICT = HostSetting("acme.strict", "--acme-strict", "Strict.", "switch")


class Switched:
    settings = (STRICT,)


def test_a_switch_is_a_flag_without_a_value_and_true_or_false_as_a_pair() -> None:
    from sevro_core.plugin.hostsettings import click_options

    hosts: dict[str, Any] = {"acme.host.switched": Switched()}

    @click.command(params=click_options(hosts))
    def command(**values: Any) -> None:
        click.echo(repr(values[option_name(STRICT)]))

    runner = click.testing.CliRunner()
    assert runner.invoke(command, ["--acme-strict"]).output == "'true'\n"
    assert runner.invoke(command, []).output == "None\n"  # absent: not given at all
    assert runner.invoke(command, ["--acme-strict", "x"]).exit_code != 0  # takes no value
    on = resolve_settings(hosts, "acme.host.switched", {option_name(STRICT): "true"}, [])
    assert on == {"acme.strict": "true"}
    off = resolve_settings(hosts, "acme.host.switched", {}, ["acme.strict=false"])
    assert off == {"acme.strict": "false"}
    with pytest.raises(InvocationError, match="switch: its value must be true or false"):
        resolve_settings(hosts, "acme.host.switched", {}, ["acme.strict=yes"])


ADDRESS = HostSetting("acme.address", "--acme-address", "Cluster address.", "string")


class Remote:
    """An executor declaring its own option, as hosts declare settings."""

    settings = (ADDRESS,)


def test_executor_settings_are_checked_like_host_settings() -> None:
    from sevro_core.plugin.hostsettings import check_executor_declarations

    check_executor_declarations({"acme.executor.remote": Remote()}, HOSTS, {})

    class ClashesWithHost:
        settings = (HostSetting("acme.where", "--acme-bin", "Clash.", "string"),)

    with pytest.raises(InvocationError, match="flag --acme-bin is declared twice: by host"):
        check_executor_declarations({"acme.executor.x": ClashesWithHost()}, HOSTS, {})
    with pytest.raises(InvocationError, match=r"key acme\.address is declared twice"):
        check_executor_declarations(
            {"acme.executor.remote": Remote(), "acme.executor.twin": Remote()}, {}, {}
        )

    class Reserved:
        settings = (HostSetting("acme.jobs", "--jobs", "Core flag.", "string"),)

    with pytest.raises(InvocationError, match="--jobs, which is a flag of sevro itself"):
        check_executor_declarations({"acme.executor.x": Reserved()}, {}, {})

    class CandidateOnly:
        settings = (
            HostSetting("acme.x", "--acme-x", "Host business.", "string", True, None, True),
        )

    with pytest.raises(InvocationError, match="only a host's settings can be"):
        check_executor_declarations({"acme.executor.x": CandidateOnly()}, {}, {})


def test_an_executor_flag_needs_its_executor() -> None:
    from sevro_core.plugin.hostsettings import executor_option_name, resolve_executor_settings

    executors: dict[str, Any] = {"acme.executor.remote": Remote(), "sevro.executor.local": Bare()}
    flags = {executor_option_name(ADDRESS): "auto"}
    chosen = resolve_executor_settings(executors, "acme.executor.remote", flags)
    assert chosen == {"acme.address": "auto"}
    assert resolve_executor_settings(executors, "local", {}) == {}
    with pytest.raises(
        InvocationError, match=r"^--acme-address needs --executor acme\.executor\.remote$"
    ):
        resolve_executor_settings(executors, "local", flags)
