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
