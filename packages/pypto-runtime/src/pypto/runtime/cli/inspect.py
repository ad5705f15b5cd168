"""``pypto-runtime inspect ARTIFACT``: an artifact's metadata, as tables or ``--json``.

Reads ``compiled_meta.json`` (checked against the entry's manifest for a store entry) and
``prebuilt/toolchain.json``; loads no native code and needs no compiler.

Example:
    $ pypto-runtime inspect 3f2a9c            # a store key prefix
    $ pypto-runtime inspect build/add --json  # a directory
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.table import Table

from pypto.runtime.cli._common import (
    EXIT_OK,
    Located,
    add_command,
    locate,
    shape_text,
    stdout_console,
    toolchain_of,
)

__all__ = ["add_parser", "command", "describe"]

_SUMMARY = (
    "show an artifact's metadata (parameters, kernels, platform, toolchain)"  # its line in the command list
)


def add_parser(sub: Any, parent: argparse.ArgumentParser) -> None:
    p = add_command(sub, parent, "inspect", _SUMMARY, __doc__)
    p.add_argument("artifact", metavar="ARTIFACT", help="artifact directory, or store key (or unique prefix)")
    p.add_argument("--entry", help="entry of a multi-entry program directory (default: its default entry)")
    p.add_argument("--json", action="store_true", help="print one JSON object (for scripts)")
    p.set_defaults(handler=command)


def describe(found: Located) -> dict[str, Any]:
    """The JSON form: the metadata (``compiled_meta.json`` schema) plus where it was found."""
    art = found.artifact
    data: dict[str, Any] = dict(art.metadata.to_json())
    data["producer"] = art.metadata.producer or data.get("producer", "")
    data["effective_platform"] = art.platform
    data["path"] = str(art.path)
    data["key"] = found.key
    data["found_in"] = found.where
    data["entries"] = list(found.entries) or [art.metadata.entry]
    data["toolchain"] = toolchain_of(art.path)
    return data


def command(args: argparse.Namespace) -> int:
    found = locate(args.artifact, entry=args.entry)
    if args.json:
        print(json.dumps(describe(found), indent=2))
        return EXIT_OK
    _print(found)
    return EXIT_OK


def _param_table(title: str, params: Any, returned: set[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("#", "name", "direction", "dtype", "shape", "layout", "returned"):
        table.add_column(col)
    for i, p in enumerate(params):
        table.add_row(
            str(i),
            p.name,
            "scalar" if p.is_scalar else p.direction.value,
            p.dtype.value,
            shape_text(p.shape),
            p.layout.value,
            "yes" if p.name in returned else "",
        )
    return table


def _print(found: Located) -> None:
    art = found.artifact
    meta = art.metadata
    console = stdout_console()
    returned = {meta.params[i].name for i in meta.return_aliases}
    summary = Table(show_header=False, title=f"artifact {meta.name}", title_justify="left")
    summary.add_column("field", style="bold")
    summary.add_column("value")
    summary.add_row("program", meta.name)
    summary.add_row(
        "entry", meta.entry + (f" (entries: {', '.join(found.entries)})" if found.entries else "")
    )
    summary.add_row("found in", found.where)
    summary.add_row("contract", meta.contract.value)
    summary.add_row("capabilities", ", ".join(art.capabilities))
    platform = (
        art.platform if art.platform == meta.platform else f"{art.platform} (compiled for {meta.platform})"
    )
    summary.add_row("platform", f"{platform}, {meta.device_kind}, backend {meta.backend}")
    summary.add_row("runtime", meta.runtime)
    aliases = ", ".join(meta.params[i].name for i in meta.return_aliases) or "-"
    summary.add_row("returns", f"{meta.return_count} value(s): {aliases}" if meta.return_count else "nothing")
    summary.add_row("orchestration", f"{meta.orchestration.func_name} ({meta.orchestration.source})")
    summary.add_row("schema", f"{meta.schema}" + (f", written by {meta.producer}" if meta.producer else ""))
    tool = toolchain_of(art.path)
    summary.add_row(
        "toolchain",
        ", ".join(f"{k}={v}" for k, v in sorted(tool.items())) if tool else "no prebuilt binaries",
    )
    # The key and the path on lines of their own, never wrapped or cut, so they can be copied.
    if found.key:
        console.print(f"key: {found.key}", soft_wrap=True)
    console.print(f"path: {art.path}", soft_wrap=True)
    console.print(summary)
    console.print(_param_table("parameters", meta.params, returned))
    console.print(_param_table("lowered parameters (the orchestration's ABI)", meta.lowered_params, set()))
    kernels = Table(title="kernels", title_justify="left")
    for col in ("func_id", "name", "core type", "entry", "source", "buffers"):
        kernels.add_column(col)
    for k in sorted(meta.kernels, key=lambda k: k.func_id):
        used = ", ".join(f"{space} {n} B" for space, n in k.buffer_usage if n) or "-"
        kernels.add_row(str(k.func_id), k.name, k.core_type, k.entry, k.source, used)
    console.print(kernels)
