"""The shared fixtures are handed out as copies: one test cannot change another test's input."""

from __future__ import annotations

import pytest

from tests.helpers.reports import kernels_of, ncu_metrics, needs_ncu_report

ESMM = "ESMM-Research__profile_output.ncu-rep"


def test_kernels_of_hands_each_caller_its_own_table() -> None:
    first = kernels_of(ESMM)
    time_s = first["time_s"].iat[0]
    first["time_s"] = -1.0
    first.loc[0, "kernel_name"] = "changed"
    first.attrs["changed"] = True
    again = kernels_of(ESMM)
    assert again["time_s"].iat[0] == time_s > 0
    assert again["kernel_name"].iat[0] != "changed" and "changed" not in again.attrs


@needs_ncu_report
def test_ncu_metrics_are_read_only() -> None:
    launch = ncu_metrics(ESMM)[0]
    with pytest.raises(TypeError):
        launch["gpu__time_duration.sum"] = 0.0  # type: ignore[index]
    assert ncu_metrics(ESMM)[0]["gpu__time_duration.sum"] > 0


def test_embedded_fixtures_are_the_published_files_with_their_licenses() -> None:
    """fixtures/third_party: each file's sha256 is the one its provenance table gives (the file its
    author published), its license text is beside it, and every file is in the table."""
    import hashlib
    import re

    from tests.helpers.reports import EMBEDDED

    table = (EMBEDDED / "PROVENANCE.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([^`]+)` \|.*$", table, re.M)}
    files = sorted(p.name for p in EMBEDDED.iterdir() if p.is_file() and p.suffix != ".md")
    assert files and set(files) == set(rows)
    for name in files:
        digest = hashlib.sha256((EMBEDDED / name).read_bytes()).hexdigest()[:16]
        assert f"`{digest}`" in rows[name], name
        license_file = re.search(r"`(licenses/[^`]+)`", rows[name]).group(1)
        assert (EMBEDDED / license_file).is_file(), license_file
